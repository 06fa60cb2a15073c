package driftcheck

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/addonops/addon-operator/drift"
	"github.com/addonops/addon-operator/internal/testclock"
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// fakeDetector answers each module's check with its report and records
// the checks (on the test's clock) and corrections.
type fakeDetector struct {
	now func() time.Time

	mu        sync.Mutex
	reports   map[string]drift.Report // by module; none: not drifted
	noRelease map[string]bool         // Check says !ok, Diff ErrNoRelease
	checkErr  error
	at        []time.Time
	checked   []string
	corrected []string

	hold     chan struct{} // when set, Check waits for it
	entered  chan string   // when set, Check sends the module on entering
	inFlight atomic.Int32
	overlap  atomic.Bool
}

var _ Detector = (*fakeDetector)(nil)

func (f *fakeDetector) Check(_ context.Context, module string) (drift.Report, bool, error) {
	if f.inFlight.Add(1) > 1 {
		f.overlap.Store(true)
	}
	defer f.inFlight.Add(-1)
	if f.entered != nil {
		f.entered <- module
	}
	f.mu.Lock()
	if f.now != nil {
		f.at = append(f.at, f.now())
	}
	f.checked = append(f.checked, module)
	rep, noRel, err, hold := f.reports[module], f.noRelease[module], f.checkErr, f.hold
	f.mu.Unlock()
	if hold != nil {
		<-hold
	}
	return rep, !noRel, err
}

func (f *fakeDetector) Correct(_ context.Context, module string) (drift.Report, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.corrected = append(f.corrected, module)
	rep := f.reports[module]
	delete(f.reports, module) // the chart's fields are back
	return rep, nil
}

func (f *fakeDetector) Diff(_ context.Context, module string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noRelease[module] {
		return "", drift.ErrNoRelease
	}
	return "--- live\n+++ chart\n", nil
}

func (f *fakeDetector) set(module string, rep drift.Report) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reports == nil {
		f.reports = map[string]drift.Report{}
	}
	f.reports[module] = rep
}

func (f *fakeDetector) checks() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.at...)
}

func (f *fakeDetector) corrections() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.corrected...)
}

func (f *fakeDetector) checkedModules() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.checked...)
}

// fakeEvents records the Events' messages.
type fakeEvents struct {
	mu   sync.Mutex
	msgs []string
}

func (e *fakeEvents) ModuleWarning(_ context.Context, _, reason, message string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.msgs = append(e.msgs, reason+": "+message)
	return nil
}

func (e *fakeEvents) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.msgs)
}

// mod is a module of the fixture's tree and its registry state.
type mod struct {
	name     string
	noChart  bool
	disabled bool
	state    runstate.ModuleState // "": Ready
}

// fixture is a Checker over a tree of modules, a manual clock, and a
// "main" queue held by a gate task so corrections wait where the test can
// see them until release.
type fixture struct {
	c       *Checker
	det     *fakeDetector
	events  *fakeEvents
	clock   *testclock.Manual
	rec     *metrics.Recorder
	trees   *runstate.Trees
	modules *runstate.Modules
	main    *queue.Queue
	release func()
}

func newFixture(t *testing.T, mods []mod, data map[string]string, mode string, det *fakeDetector) *fixture {
	t.Helper()
	model := &loader.Model{}
	for _, m := range mods {
		model.Modules = append(model.Modules, &loader.Module{Name: m.name, Key: m.name, HasChart: !m.noChart})
	}
	trees, modules, queues := &runstate.Trees{}, runstate.NewModules(), &runstate.Queues{}
	trees.Start(&runstate.Tree{Model: model, ConfigData: data})
	modules.Reset(model)
	for _, m := range mods {
		state := m.state
		if state == "" {
			state = runstate.StateReady
		}
		modules.Update(m.name, func(st *runstate.Module) { st.Enabled, st.State = !m.disabled, state })
	}
	ctx, cancel := context.WithCancel(context.Background())
	set := queue.NewSet(ctx, queue.Options{Logger: quietLogger()})
	queues.Set(set)
	gate, started := make(chan struct{}), make(chan struct{})
	set.Main().Add(&queue.Task{Key: queue.Key{Kind: "gate"}, Do: func(context.Context) error {
		close(started)
		<-gate
		return nil
	}})
	<-started
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(func() {
		release()
		cancel()
		set.Wait()
	})
	clock := testclock.New()
	if det != nil && det.now == nil {
		det.now = clock.Now
	}
	f := &fixture{det: det, events: &fakeEvents{}, clock: clock, trees: trees, modules: modules, main: set.Main(), release: release,
		rec: metrics.New(prometheus.NewRegistry(), trees.RevisionInfo)}
	opts := Options{Mode: mode, Trees: trees, Modules: modules, Queues: queues, Metrics: f.rec, Events: f.events,
		Logger: quietLogger(), Now: clock.Now, After: clock.After}
	if det != nil {
		opts.Detector = det
	}
	f.c = New(opts)
	return f
}

func (f *fixture) drifted(module string) float64 {
	return testutil.ToFloat64(f.rec.DriftedObjects.WithLabelValues(module))
}

func (f *fixture) queued(module string) bool {
	return f.main.HasQueuedKey(queue.Key{Kind: KindCorrect, Module: module})
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// image is a report of one Deployment whose image differs.
func image(name string) drift.Report {
	return drift.Report{Checked: 1, Objects: []drift.Object{{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: name,
		Fields: []string{"spec.template.spec.containers[0].image"}}}}
}
