package binding

import (
	"testing"
	"time"

	"github.com/addonops/addon-operator/internal/testwait"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
)

// Schedules follow the running state alone (docs/operator.md, "Schedule
// bindings"): a module's start once it is enabled and ran since, and stop
// when it is disabled; global hooks' start at the first convergence; a
// new tree without the hook stops it. No step calls the bindings: each
// step below only changes runstate (or closes Converged), and the entries
// follow.
func TestSchedulesFollowState(t *testing.T) {
	t.Parallel()
	every10s := mustCron(t, "*/10 * * * * *")
	tick := hook("", "tick.sh", loader.HookConfig{Schedules: []loader.ScheduleBinding{{Name: "tick", Crontab: "*/10 * * * * *", Schedule: every10s}}})
	alpha := hook("alpha", "a.sh", loader.HookConfig{Schedules: []loader.ScheduleBinding{{Name: "every", Crontab: "*/10 * * * * *", Schedule: every10s}}})
	tree := model([]*loader.Hook{tick}, map[string][]*loader.Hook{"alpha": {alpha}})
	f := newFixture(t, tree, true)
	steps := []struct {
		name   string
		change func()
		want   int // schedule entries running after it
	}{
		{"start-up: nothing ran", func() {}, 0},
		{"alpha enabled, not run yet", func() {
			f.modules.Edit(func(m map[string]*runstate.Module, enabled *[]string) {
				m["alpha"].Enabled, m["alpha"].State = true, runstate.StatePending
				*enabled = []string{"alpha"}
			})
		}, 0},
		{"alpha ran", func() {
			f.modules.Update("alpha", func(st *runstate.Module) { st.StartupDone = true })
			f.modules.SetState("alpha", runstate.StateReady, nil)
		}, 1},
		{"first convergence", f.steps.converge, 2},
		{"alpha disabled", func() { f.modules.Update("alpha", func(st *runstate.Module) { st.Enabled = false }) }, 1},
		{"alpha enabled again (ran before)", func() { f.modules.Update("alpha", func(st *runstate.Module) { st.Enabled = true }) }, 2},
		{"a tree without alpha's hook", func() {
			next := model([]*loader.Hook{tick}, map[string][]*loader.Hook{"alpha": nil})
			if err := f.trees.Transition(func(*runstate.Tree) (*runstate.Tree, error) { return &runstate.Tree{Model: next}, nil }); err != nil {
				t.Fatal(err)
			}
		}, 1},
	}
	for _, s := range steps {
		s.change()
		testwait.Until(t, s.name, func() bool { return f.entries() == s.want })
	}
}

// A schedule started by a state change fires on the injected clock and
// queues a run with its Schedule context; disabling the module stops it
// (no firing after, however far the clock moves).
func TestModuleScheduleStartsAndStopsOnStateChange(t *testing.T) {
	t.Parallel()
	alpha := hook("alpha", "a.sh", loader.HookConfig{Schedules: []loader.ScheduleBinding{{Name: "every", Crontab: "*/10 * * * * *", Schedule: mustCron(t, "*/10 * * * * *")}}})
	f := newFixture(t, model(nil, map[string][]*loader.Hook{"alpha": {alpha}}), true)
	f.modules.Edit(func(m map[string]*runstate.Module, enabled *[]string) {
		m["alpha"].Enabled, m["alpha"].StartupDone, m["alpha"].State = true, true, runstate.StateReady
		*enabled = []string{"alpha"}
	})
	testwait.Until(t, "alpha's schedule to wait on the clock", func() bool { return f.clock.Waiting() == 1 })
	f.clock.Advance(10 * time.Second)
	testwait.Until(t, "alpha's scheduled run", func() bool { return len(f.runner.all()) == 1 })
	if r := f.runner.all()[0]; r.binding != "every" || len(r.contexts) != 1 || r.contexts[0]["type"] != "Schedule" {
		t.Fatalf("run %+v, want one Schedule context of binding every", r)
	}

	f.modules.Update("alpha", func(st *runstate.Module) { st.Enabled = false })
	testwait.Until(t, "alpha's schedule to stop", func() bool { return f.entries() == 0 })
	f.clock.Advance(time.Hour)
	testwait.Until(t, "queues idle", f.idle)
	if n := len(f.runner.all()); n != 1 {
		t.Fatalf("a disabled module's schedule ran: %d runs", n)
	}
}

// Monitors follow the state too: a disabled module's stay until its delete
// finished (state Disabled), so its afterDeleteHelm hooks see the
// snapshots; a new tree that changed a hook stops that hook's monitors.
func TestMonitorsFollowState(t *testing.T) {
	t.Parallel()
	kb := loader.KubernetesBinding{Name: "pods", APIVersion: "v1", Kind: "Pod", ExecuteHookOnSynchronization: false}
	tests := []struct {
		name     string
		change   func(f *fixture)
		stopped  bool
		snapshot int // objects in the hook's ordered context after the change
	}{
		{"disabled, its delete under way", func(f *fixture) {
			f.modules.Update("alpha", func(st *runstate.Module) { st.Enabled = false })
		}, false, 1},
		{"disabled, its delete finished", func(f *fixture) {
			f.modules.Update("alpha", func(st *runstate.Module) { st.Enabled = false })
			f.modules.SetState("alpha", runstate.StateDisabled, nil)
		}, true, 0},
		{"a new tree changed the hook", func(f *fixture) {
			changed := hook("alpha", "a.sh", loader.HookConfig{Kubernetes: []loader.KubernetesBinding{kb}})
			changed.Hash = "new"
			next := model(nil, map[string][]*loader.Hook{"alpha": {changed}})
			if err := f.trees.Transition(func(*runstate.Tree) (*runstate.Tree, error) { return &runstate.Tree{Model: next}, nil }); err != nil {
				t.Fatal(err)
			}
		}, true, 0},
		{"a values change (same tree, module still enabled)", func(f *fixture) {
			f.modules.SetState("alpha", runstate.StateRunning, nil)
		}, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			alpha := hook("alpha", "a.sh", loader.HookConfig{Kubernetes: []loader.KubernetesBinding{kb}})
			f := newFixture(t, model(nil, map[string][]*loader.Hook{"alpha": {alpha}}), true)
			f.source.objects = map[string][]kube.ObjectEvent{alpha.Name + ":pods": {{Type: loader.EventAdded, Namespace: "ns", Name: "p1"}}}
			f.modules.Edit(func(m map[string]*runstate.Module, enabled *[]string) {
				m["alpha"].Enabled, m["alpha"].State = true, runstate.StateRunning
				*enabled = []string{"alpha"}
			})
			if err := f.bs.Synchronize(t.Context(), []*loader.Hook{alpha}); err != nil {
				t.Fatal(err)
			}
			mon := f.source.get(alpha.Name + ":pods")
			tt.change(f)
			if tt.stopped {
				testwait.Until(t, "the monitor to stop", mon.isStopped)
			} else {
				// the state change was seen: a later change's sync has run
				v, _ := f.modules.Changed()
				f.modules.Update("alpha", func(*runstate.Module) {})
				testwait.Until(t, "a sync after the change", func() bool { return f.syncedAfter(v) })
				if mon.isStopped() {
					t.Fatal("the monitor stopped")
				}
			}
			c := f.bs.OrderedContext(alpha, loader.AfterDeleteHelm)
			if got := len(c[0]["snapshots"].(map[string]any)["pods"].([]map[string]any)); got != tt.snapshot {
				t.Fatalf("afterDeleteHelm sees %d objects, want %d", got, tt.snapshot)
			}
		})
	}
}
