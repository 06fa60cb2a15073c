package driftcheck

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/addonops/addon-operator/drift"
	"github.com/addonops/addon-operator/internal/testwait"
	"github.com/addonops/addon-operator/lifecycle/runstate"
)

// The interval's check of each module: what /status, the metric and
// Events show, and whether a correction is queued, by module state, chart,
// mode and the detector's answer (docs/operator.md, "Drift").
func TestCheckAll(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		mod      mod
		data     map[string]string
		mode     string // the default mode ("": correct)
		rep      *drift.Report
		noRel    bool
		checkErr error
		checked  bool   // the detector was asked
		wantMode string // "": no drift on /status
		queued   bool
		held     bool // the source is suspended (Options.Held)
	}{
		{name: "warn: reported, not corrected", mod: mod{name: "web"}, mode: runstate.DriftWarn, rep: ptr(image("web")),
			checked: true, wantMode: runstate.DriftWarn},
		{name: "correct (default): reported and queued", mod: mod{name: "web"}, rep: ptr(image("web")),
			checked: true, wantMode: runstate.DriftCorrect, queued: true},
		{name: "the module's key overrides the default", mod: mod{name: "web"}, data: map[string]string{"webDrift": "warn"}, rep: ptr(image("web")),
			checked: true, wantMode: runstate.DriftWarn},
		{name: "a refused mode falls back to the default", mod: mod{name: "web"}, data: map[string]string{"webDrift": "sometimes"}, mode: runstate.DriftWarn,
			rep: ptr(image("web")), checked: true, wantMode: runstate.DriftWarn},
		{name: "maintenance: reported, never corrected", mod: mod{name: "web"}, data: map[string]string{"webMaintenance": runstate.NoResourceReconciliation},
			rep: ptr(image("web")), checked: true, wantMode: "maintenance"},
		{name: "suspended: reported, not corrected", mod: mod{name: "web"}, rep: ptr(image("web")), held: true,
			checked: true, wantMode: ModeSuspended},
		{name: "suspended over the module's correct key", mod: mod{name: "web"}, data: map[string]string{"webDrift": "correct"},
			rep: ptr(image("web")), held: true, checked: true, wantMode: ModeSuspended},
		{name: "no drift", mod: mod{name: "web"}, checked: true},
		{name: "no release", mod: mod{name: "web"}, rep: ptr(image("web")), noRel: true, checked: true},
		{name: "an error with nothing checked reports nothing", mod: mod{name: "web"}, rep: &drift.Report{}, checkErr: errors.New("boom"), checked: true},
		{name: "an error after some objects reports them", mod: mod{name: "web"}, rep: ptr(image("web")), checkErr: errors.New("one object failed"),
			checked: true, wantMode: runstate.DriftCorrect, queued: true},
		{name: "not ready: not checked", mod: mod{name: "web", state: runstate.StateRunning}, rep: ptr(image("web"))},
		{name: "failed: not checked", mod: mod{name: "web", state: runstate.StateFailed}, rep: ptr(image("web"))},
		{name: "disabled: not checked", mod: mod{name: "web", disabled: true}, rep: ptr(image("web"))},
		{name: "no chart: not checked", mod: mod{name: "web", noChart: true}, rep: ptr(image("web"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			det := &fakeDetector{checkErr: tt.checkErr, noRelease: map[string]bool{"web": tt.noRel}}
			if tt.rep != nil {
				det.set("web", *tt.rep)
			}
			f := newFixture(t, []mod{tt.mod}, tt.data, tt.mode, det)
			f.c.opts.Held = func() bool { return tt.held }
			f.c.CheckAll(t.Context())
			if got := len(det.checkedModules()) > 0; got != tt.checked {
				t.Fatalf("checked %v, want %v", got, tt.checked)
			}
			st := f.c.Of("web")
			if tt.wantMode == "" {
				if st != nil || f.drifted("web") != 0 || f.events.count() != 0 {
					t.Fatalf("/status %+v, metric %v, %d Events; want no drift", st, f.drifted("web"), f.events.count())
				}
			} else if st == nil || st.Mode != tt.wantMode || len(st.Objects) != 1 || f.drifted("web") != 1 || f.events.count() != 1 {
				t.Fatalf("/status %+v, metric %v, %d Events; want mode %s, one object, one Event", st, f.drifted("web"), f.events.count(), tt.wantMode)
			}
			if got := f.queued("web"); got != tt.queued {
				t.Fatalf("correction queued %v, want %v", got, tt.queued)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// A drift is recorded as an Event once, again when it changes or comes
// back after it went; Of hands out a copy.
func TestEventOncePerDrift(t *testing.T) {
	t.Parallel()
	det := &fakeDetector{}
	det.set("web", image("web"))
	f := newFixture(t, []mod{{name: "web"}}, nil, runstate.DriftWarn, det)
	ctx := t.Context()
	steps := []struct {
		do     func()
		events int
	}{
		{func() { f.c.CheckAll(ctx) }, 1},
		{func() { f.c.CheckAll(ctx) }, 1},
		{func() {
			rep := image("web")
			rep.Objects[0].Fields = append(rep.Objects[0].Fields, "spec.replicas")
			det.set("web", rep)
			f.c.CheckAll(ctx)
		}, 2},
		{func() { det.set("web", drift.Report{Checked: 1}); f.c.CheckAll(ctx) }, 2},
		{func() { det.set("web", image("web")); f.c.CheckAll(ctx) }, 3},
	}
	for i, s := range steps {
		s.do()
		if n := f.events.count(); n != s.events {
			t.Fatalf("step %d: %d Events, want %d", i, n, s.events)
		}
	}
	st := f.c.Of("web")
	st.Objects[0].Name = "changed"
	if f.c.Of("web").Objects[0].Name != "web" {
		t.Fatal("Of shares the report's objects")
	}
	if !strings.Contains(f.events.msgs[0], "Drifted: module web: 1 object(s) differ from the chart: Deployment/ns/web (spec.template.spec.containers[0].image)") {
		t.Fatalf("Event %q", f.events.msgs[0])
	}
}

// Corrections are keyed by module: however many checks find a module
// drifted, one waits in "main"; once it runs, the chart's fields are
// applied again and /status follows at once.
func TestCorrectionQueuedOncePerModule(t *testing.T) {
	t.Parallel()
	det := &fakeDetector{}
	det.set("web", image("web"))
	det.set("echo", image("echo"))
	f := newFixture(t, []mod{{name: "web"}, {name: "echo"}, {name: "idle"}}, nil, "", det)
	for range 3 {
		f.c.CheckAll(t.Context())
	}
	if n := f.main.Len(); n != 3 {
		t.Fatalf("queue length %d, want 3 (the gate, one correction per drifted module)", n)
	}
	f.release()
	testwait.Until(t, "the corrections to run", func() bool { return f.main.Len() == 0 })
	got := f.det.corrections()
	slices.Sort(got)
	if !slices.Equal(got, []string{"echo", "web"}) {
		t.Fatalf("corrected %v, want echo and web once each", got)
	}
	if st := f.c.Of("web"); st != nil || f.drifted("web") != 0 {
		t.Fatalf("after the correction: %+v, metric %v", st, f.drifted("web"))
	}
}

// A correction checks again when it runs: a module whose mode turned to
// warn, or that went into maintenance, is left as it is.
func TestCorrectionRechecksMode(t *testing.T) {
	t.Parallel()
	for _, data := range []map[string]string{{"webDrift": "warn"}, {"webMaintenance": runstate.NoResourceReconciliation}} {
		det := &fakeDetector{}
		det.set("web", image("web"))
		f := newFixture(t, []mod{{name: "web"}}, nil, "", det)
		f.c.CheckAll(t.Context())
		if !f.queued("web") {
			t.Fatal("no correction queued")
		}
		if err := f.trees.Transition(func(cur *runstate.Tree) (*runstate.Tree, error) {
			next := *cur
			next.ConfigData = data
			return &next, nil
		}); err != nil {
			t.Fatal(err)
		}
		f.release()
		testwait.Until(t, "the correction to run", func() bool { return f.main.Len() == 0 })
		if got := det.corrections(); len(got) != 0 {
			t.Fatalf("%v: corrected %v", data, got)
		}
	}
}

// Diff refuses with sentinel errors, named for the CLI.
func TestDiffErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		det     *fakeDetector
		module  string
		want    error
		wantMsg string
	}{
		{name: "off", module: "web", want: ErrNoDetector, wantMsg: "drift checks are off"},
		{name: "unknown module", det: &fakeDetector{}, module: "nope", want: ErrUnknownModule,
			wantMsg: `module "nope" not found (addon-operator module list shows the modules)`},
		{name: "no release", det: &fakeDetector{noRelease: map[string]bool{"web": true}}, module: "web", want: ErrNotDeployed,
			wantMsg: `module "web" has no deployed release`},
		{name: "a diff", det: &fakeDetector{}, module: "web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, []mod{{name: "web"}}, nil, "", tt.det)
			diff, err := f.c.Diff(t.Context(), tt.module)
			if tt.want == nil {
				if err != nil || !strings.Contains(diff, "+++ chart") {
					t.Fatalf("diff %q, %v", diff, err)
				}
				return
			}
			if !errors.Is(err, tt.want) || err.Error() != tt.wantMsg {
				t.Fatalf("error %v, want %q (%v)", err, tt.wantMsg, tt.want)
			}
		})
	}
}

// Two checks of one module (the interval's and an edit's) never overlap:
// the second waits for the first; another module's does not wait.
func TestChecksOfAModuleDoNotOverlap(t *testing.T) {
	t.Parallel()
	hold, entered := make(chan struct{}), make(chan string, 4)
	det := &fakeDetector{hold: hold, entered: entered}
	f := newFixture(t, []mod{{name: "web"}, {name: "echo"}}, nil, runstate.DriftWarn, det)
	model := f.trees.Load().Model
	var wg sync.WaitGroup
	for _, m := range []int{0, 0, 1} {
		wg.Go(func() { f.c.checkModule(context.Background(), model.Modules[m]) })
	}
	got := []string{<-entered, <-entered}
	slices.Sort(got)
	if !slices.Equal(got, []string{"echo", "web"}) {
		t.Fatalf("checks entered %v, want one of web and echo's", got)
	}
	// the second check of web must wait on the first: give it the time a
	// missing lock would need to show (a negative check has no event to
	// poll for)
	select {
	case m := <-entered:
		t.Fatalf("a second check of %s ran beside the first", m)
	case <-time.After(100 * time.Millisecond):
	}
	close(hold)
	wg.Wait()
	if n := len(det.checkedModules()); n != 3 {
		t.Fatalf("%d checks, want 3", n)
	}
}
