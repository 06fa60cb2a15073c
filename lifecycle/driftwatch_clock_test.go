package lifecycle

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/addonops/addon-operator/drift"
	"github.com/addonops/addon-operator/loader"
)

// fakeDetector records when checks ran (on the test's clock) and can
// hold them.
type fakeDetector struct {
	now      func() time.Time
	mu       sync.Mutex
	at       []time.Time
	hold     chan struct{} // when set, Check waits for it
	inFlight atomic.Int32
	overlap  atomic.Bool
}

var _ DriftDetector = (*fakeDetector)(nil)

func (f *fakeDetector) Check(context.Context, string) (drift.Report, bool, error) {
	if f.inFlight.Add(1) > 1 {
		f.overlap.Store(true)
	}
	defer f.inFlight.Add(-1)
	f.mu.Lock()
	f.at = append(f.at, f.now())
	hold := f.hold
	f.mu.Unlock()
	if hold != nil {
		<-hold
	}
	return drift.Report{}, true, nil
}

func (f *fakeDetector) Correct(context.Context, string) (drift.Report, error) {
	return drift.Report{}, nil
}
func (f *fakeDetector) Diff(context.Context, string) (string, error) { return "", nil }

func (f *fakeDetector) checks() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.at...)
}

// driftStepsOn is driftSteps over one module "web" with a chart, in the
// given state, in warn mode.
func driftStepsOn(clock *manualClock, det DriftDetector, state ModuleState) *driftSteps {
	model := &loader.Model{Modules: []*loader.Module{{Name: "web", Key: "web", HasChart: true}}}
	trees, modules := &runstate.Trees{}, runstate.NewModules()
	trees.Start(&runstate.Tree{Model: model})
	modules.Reset(model)
	modules.Update("web", func(st *runstate.Module) { st.Enabled, st.State = true, state })
	cfg := Config{Drift: det, DriftMode: DriftWarn, Now: clock.Now, After: clock.After}
	return &driftSteps{cfg: cfg, logger: quiet(), metrics: metrics.New(prometheus.NewRegistry(), trees.RevisionInfo),
		trees: trees, modules: modules, queues: &runstate.Queues{}}
}

// Edit checks on the operator's clock: a burst is one check once quiet;
// a writer that never stops is checked once per spacing while it writes;
// a module that is not ready is checked once it is.
func TestDriftWatchOnClock(t *testing.T) {
	clock := newManualClock()
	det := &fakeDetector{now: clock.Now}
	steps := driftStepsOn(clock, det, StateReady)
	w := newDriftWatch(steps, steps.cfg)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.loop(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	t0 := clock.Now()
	// run moves the clock to t0+until in 100ms steps, editing at the given
	// offsets, and gives the loop time to act at each step
	run := func(until time.Duration, edits func(at time.Duration) bool) {
		for at := clock.Now().Sub(t0); at <= until; at += 100 * time.Millisecond {
			if edits != nil && edits(at) {
				w.edited("web")
			}
			time.Sleep(3 * time.Millisecond)
			clock.Advance(100 * time.Millisecond)
			time.Sleep(3 * time.Millisecond)
		}
	}
	offsets := func() []time.Duration {
		var out []time.Duration
		for _, c := range det.checks() {
			out = append(out, c.Sub(t0).Round(100*time.Millisecond))
		}
		return out
	}
	near := func(got, want time.Duration) bool { return got >= want && got <= want+500*time.Millisecond }

	// a burst over 1.5 s: one check 2 s after its last edit
	run(8*time.Second, func(at time.Duration) bool { return at <= 1500*time.Millisecond && at%(500*time.Millisecond) == 0 })
	if got := offsets(); len(got) != 1 || !near(got[0], 3500*time.Millisecond) {
		t.Fatalf("a burst's checks at %v, want one at 3.5s", got)
	}

	// a write every second from 10s to 40s: checked 10s after the first
	// edit not checked, then at most every 10s, not only when it stops
	run(50*time.Second, func(at time.Duration) bool {
		return at >= 10*time.Second && at <= 40*time.Second && at%time.Second == 0
	})
	// (20s, 30s, 40s, 50s, or 20s, 31s, 42s: an edit may land just before
	// or after the check of its second)
	got := offsets()[1:]
	during := 0
	for i, at := range got {
		if at <= 40*time.Second {
			during++
		}
		if i > 0 && at-got[i-1] < 10*time.Second {
			t.Fatalf("a constant writer's checks at %v: two under 10s apart", got)
		}
	}
	if len(got) < 3 || len(got) > 4 || !near(got[0], 20*time.Second) || during < 2 || got[len(got)-1] > 52*time.Second {
		t.Fatalf("a constant writer's checks at %v, want the first at 20s, then every 10s while it writes, the last by 52s", got)
	}

	// not ready: not checked; checked once ready, within a spacing
	steps.modules.Update("web", func(st *runstate.Module) { st.State = StateRunning })
	n := len(det.checks())
	run(60*time.Second, func(at time.Duration) bool { return at == 52*time.Second })
	if got := len(det.checks()); got != n {
		t.Fatalf("%d checks of a running module", got-n)
	}
	steps.modules.Update("web", func(st *runstate.Module) { st.State = StateReady })
	run(71*time.Second, nil)
	if got := offsets()[n:]; len(got) != 1 || got[0] < 60*time.Second {
		t.Fatalf("checks after the module turned ready: %v, want one", got)
	}
	// disabled: the edit is dropped
	steps.modules.Update("web", func(st *runstate.Module) { st.Enabled = false })
	n = len(det.checks())
	run(90*time.Second, func(at time.Duration) bool { return at == 72*time.Second })
	steps.modules.Update("web", func(st *runstate.Module) { st.Enabled = true })
	run(110*time.Second, nil)
	if got := len(det.checks()); got != n {
		t.Fatalf("%d checks of an edit made while the module was disabled", got-n)
	}
}

// Two checks of one module (the interval's and an edit's) never overlap:
// the second waits for the first.
func TestDriftChecksOfAModuleDoNotOverlap(t *testing.T) {
	clock := newManualClock()
	hold := make(chan struct{})
	det := &fakeDetector{now: clock.Now, hold: hold}
	steps := driftStepsOn(clock, det, StateReady)
	m := steps.trees.Load().Model.Modules[0]
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { steps.checkModule(t.Context(), m) })
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(det.checks()); n != 1 {
		t.Fatalf("%d checks running at once, want 1", n)
	}
	close(hold)
	wg.Wait()
	if n := len(det.checks()); n != 2 || det.overlap.Load() {
		t.Fatalf("%d checks, overlapping %v", n, det.overlap.Load())
	}
}
