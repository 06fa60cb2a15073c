package lifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/addonops/addon-operator/lifecycle/runstate"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// A tree change inside one module runs that module alone only while no
// reload is under way or waits (docs/operator.md, "Module-scoped
// reloads"): the phase says so, not the queue.
func TestModuleScopedFollowsThePhase(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	inside := loader.Diff{Changed: []string{"web"}}
	cases := []struct {
		name   string
		set    func(r *reloadPhase)
		scoped bool
		report bool // a later end reports the revision (treeSteps.reloading)
	}{
		{"before the first reload", func(*reloadPhase) {}, false, false},
		{"converged", func(r *reloadPhase) { r.begin(phaseReloading, now); r.end(now) }, true, false},
		{"a reload waits", func(r *reloadPhase) { r.begin(phaseReloading, now); r.end(now); r.askReload() }, false, true},
		{"beforeAll", func(r *reloadPhase) { r.begin(phaseReloading, now); r.end(now); r.begin(phaseReloading, now) }, false, true},
		{"discovery", func(r *reloadPhase) {
			r.begin(phaseReloading, now)
			r.end(now)
			r.begin(phaseReloading, now)
			r.enter(phaseDiscovering)
		}, false, true},
		{"modules run", func(r *reloadPhase) {
			r.begin(phaseReloading, now)
			r.end(now)
			r.begin(phaseReloading, now)
			r.enter(phaseConverging)
		}, false, true},
		{"a module-scoped reload waits", func(r *reloadPhase) { r.begin(phaseReloading, now); r.end(now); r.askChanged() }, true, true},
		{"a module-scoped reload runs", func(r *reloadPhase) { r.begin(phaseReloading, now); r.end(now); r.begin(phaseConverging, now) }, false, true},
		{"a purge's report waits", func(r *reloadPhase) { r.begin(phaseReloading, now); r.end(now); r.askReport() }, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			st := &steps{phase: newReloadPhase()}
			c.set(st.phase)
			ts := &treeSteps{steps: st}
			if got := ts.moduleScoped(inside); got != c.scoped {
				t.Errorf("moduleScoped = %v, want %v", got, c.scoped)
			}
			if got := ts.reloading(); got != c.report {
				t.Errorf("reloading = %v, want %v", got, c.report)
			}
		})
	}
}

// 'reload all modules' is queued at the tail once while one waits, and
// again once the waiting one has begun.
func TestQueueReloadAllOnceWhileOneWaits(t *testing.T) {
	t.Parallel()
	set := queue.NewSet(t.Context(), queue.Options{Logger: quiet()})
	queues := &runstate.Queues{}
	queues.Set(set)
	st := &steps{queues: queues, phase: newReloadPhase()}
	main := set.Main()
	block, started := make(chan struct{}), make(chan struct{})
	defer close(block)
	main.Add(&queue.Task{Key: queue.Key{Kind: "gate"}, Do: func(context.Context) error {
		close(started)
		<-block
		return nil
	}})
	<-started
	st.queueReloadAll()
	st.queueReloadAll()
	if n := main.Len(); n != 2 {
		t.Fatalf("queue length = %d, want 2 (the gate, one reload)", n)
	}
	// the waiting reload began: a later request is a new reload
	st.phase.begin(phaseReloading, time.Now())
	st.queueReloadAll()
	if n := main.Len(); n != 3 {
		t.Fatalf("queue length = %d, want 3 (the gate, the reload that began, a new one)", n)
	}
}

// waiting: a task of the kind waits in "main" (not running), as /queue
// shows it; the operator itself asks the phase, never the queue.
func waiting(set *queue.Set, kind queue.Kind) bool {
	for _, q := range set.Dump() {
		for _, task := range q.Tasks {
			if q.Name == queue.MainQueue && task.Kind == string(kind) && !task.Running {
				return true
			}
		}
	}
	return false
}
