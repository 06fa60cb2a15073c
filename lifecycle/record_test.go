package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/lifecycle/hookrun"
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/queue"
)

// fakeHealth records what the recorder tells the health tracker.
type fakeHealth struct{ calls []string }

var _ HealthTracker = (*fakeHealth)(nil)

func (f *fakeHealth) Deployed(_ context.Context, module string, revision int, upgraded bool) {
	f.calls = append(f.calls, fmt.Sprintf("deployed %s %d %v", module, revision, upgraded))
}
func (f *fakeHealth) Removed(module string) { f.calls = append(f.calls, "removed "+module) }
func (f *fakeHealth) Module(string) (health.ModuleHealth, bool) {
	return health.ModuleHealth{}, false
}
func (f *fakeHealth) Watch(string) (health.Watched, bool)   { return health.Watched{}, false }
func (f *fakeHealth) Refresh(context.Context, string) error { return nil }

// One outcome, one place: the module's state, the revision's states told,
// the health tracker and the failure metric, for each thing a step does.
func TestRecorder(t *testing.T) {
	t.Parallel()
	const commit = "c0ffee"
	hookErr := hookrun.NewHookError("hook web/hooks/a (beforeHelm)", errors.New("exit status 1"))
	conflict := queue.Terminal(reasonReleaseConflict, fmt.Errorf("release web: %w", kube.ErrNotOurs))
	cases := []struct {
		name      string
		o         outcome
		state     ModuleState
		lastError bool
		told      []RevisionState
		health    []string
		failed    float64 // addon_operator_module_run_errors_total of web
	}{
		{name: "run", o: outcome{What: moduleRan, Module: "web", Release: kube.Result{Revision: 3, Upgraded: true}, Started: time.Unix(1, 0)},
			state: StateReady, told: []RevisionState{{Commit: commit, Module: "web", State: RevisionApplied}}, health: []string{"deployed web 3 true"}},
		{name: "run failed", o: outcome{What: moduleRunFailed, Module: "web", Err: hookErr},
			state: StateFailed, lastError: true, failed: 1,
			told: []RevisionState{{Commit: commit, Module: "web", State: RevisionFailed, Reason: hookErr.Error()},
				{Commit: commit, State: RevisionFailed, Reason: "module web: " + hookErr.Error()}}},
		{name: "run cut short", o: outcome{What: moduleRunFailed, Module: "web", Err: context.Canceled},
			state: StateFailed},
		{name: "run in conflict", o: outcome{What: moduleRunFailed, Module: "web", Err: conflict},
			state: StateFailed, lastError: true,
			told: []RevisionState{{Commit: commit, Module: "web", State: RevisionFailed, Reason: "see /status"},
				{Commit: commit, State: RevisionFailed, Reason: "module web: see /status"}}},
		{name: "deleted", o: outcome{What: moduleDeleted, Module: "web"}, state: StateDisabled, health: []string{"removed web"}},
		{name: "delete in conflict", o: outcome{What: moduleDeleteFailed, Module: "web", Err: conflict},
			state: StateDisabled, lastError: true, health: []string{"removed web"}},
		{name: "delete failed", o: outcome{What: moduleDeleteFailed, Module: "web", Err: errors.New("uninstall: boom")},
			state: StateFailed, lastError: true,
			told: []RevisionState{{Commit: commit, Module: "web", State: RevisionFailed, Reason: "see /status"},
				{Commit: commit, State: RevisionFailed, Reason: "module web: see /status"}}},
		{name: "purged", o: outcome{What: modulePurged, Module: "web"}, state: StatePending, health: []string{"removed web"}},
		{name: "nothing", o: outcome{What: nothing, Module: "web"}, state: StatePending},
		{name: "global hook failed", o: outcome{What: globalHookFailed, Err: hookErr}, state: StatePending,
			told: []RevisionState{{Commit: commit, State: RevisionFailed, Reason: hookErr.Error()}}},
		{name: "applying", o: outcome{What: revisionApplying, Commit: "next"}, state: StatePending,
			told: []RevisionState{{Commit: "next", State: RevisionApplying}}},
		{name: "refused", o: outcome{What: revisionRefused, Commit: "next", Reason: "modules/web: does not load"}, state: StatePending,
			told: []RevisionState{{Commit: "next", State: RevisionFailed, Reason: "modules/web: does not load"}}},
		{name: "reload ended", o: outcome{What: reloadEnded}, state: StatePending,
			told: []RevisionState{{Commit: commit, State: RevisionApplied}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			trees := &runstate.Trees{}
			trees.Start(&runstate.Tree{Rev: gitsync.Revision{Commit: commit}})
			modules := runstate.NewModules()
			modules.Edit(func(m map[string]*runstate.Module, enabled *[]string) {
				m["web"] = &runstate.Module{State: StatePending, Enabled: true}
				*enabled = []string{"web"}
			})
			var told []RevisionState
			h := &fakeHealth{}
			reg := prometheus.NewRegistry()
			m := metrics.New(reg, trees.RevisionInfo)
			r := &recorder{metrics: m, modules: modules, health: h, now: time.Now,
				report: &revisionReporter{on: func(s RevisionState) { told = append(told, s) }, trees: trees, modules: modules}}
			if err := r.record(context.Background(), c.o); !errors.Is(err, c.o.Err) {
				t.Errorf("record returned %v, want the outcome's error %v", err, c.o.Err)
			}
			st := modules.Get("web")
			if st.State != c.state || (st.LastError != "") != c.lastError {
				t.Errorf("web: state %s, error %q; want %s, an error: %v", st.State, st.LastError, c.state, c.lastError)
			}
			if !slices.Equal(told, c.told) {
				t.Errorf("told %+v, want %+v", told, c.told)
			}
			if !slices.Equal(h.calls, c.health) {
				t.Errorf("health told %q, want %q", h.calls, c.health)
			}
			if got := counter(t, m.Compact.Gatherer(reg), "addon_operator_module_run_errors_total"); got != c.failed {
				t.Errorf("module_run_errors_total = %v, want %v", got, c.failed)
			}
		})
	}
}

// counter sums a counter family's samples (0 when it has none).
func counter(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}
