package lifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/addonops/addon-operator/lifecycle/binding"
	"github.com/addonops/addon-operator/lifecycle/hookrun"
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// Task kinds, as /queue shows them.
const (
	kindGlobalHook   queue.Kind = "GlobalHookRun"
	kindReloadAll    queue.Kind = "ReloadAllModules"
	kindDiscover     queue.Kind = "DiscoverModules"
	kindModuleRun    queue.Kind = "ModuleRun"
	kindModuleDelete queue.Kind = "ModuleDelete"
	kindModulePurge  queue.Kind = "ModulePurge"
	kindConverged    queue.Kind = "ConvergeDone"
)

// steps are the task handlers of the documented lifecycle
// (docs/lifecycle.md) for the whole tree: start-up, 'reload all modules'
// (global hooks, discovery: discover.go, then the module steps of
// moduleSteps, afterAll), the reaction to ConfigMap changes (events.go)
// and auto-healing (heal.go). A new revision's steps are treeSteps'.
type steps struct {
	cfg     Config
	logger  *slog.Logger
	metrics *metrics.Recorder
	trees   *runstate.Trees
	modules *runstate.Modules
	queues  *runstate.Queues
	run     *hookrun.Runner
	checks  *settingsChecks // settingscheck.go
	bind    *binding.Bindings
	helm    Helm
	mods    *moduleSteps
	purge   *purgeGuard       // purge.go
	drift   driftPass         // heal.go
	report  *revisionReporter // revisionstate.go
	reload  reloadState       // the reload under way
}

// reloadState is the steps' bookkeeping of 'reload all modules': when the
// one under way started, whether its afterAll hooks changed global values,
// and whether one has finished (the operator is ready).
type reloadState struct {
	mu            sync.Mutex
	start         time.Time
	globalChanged bool
	ready         atomic.Bool
	converged     chan struct{} // closed when the first reload ended
}

// begin starts a reload's bookkeeping.
func (r *reloadState) begin(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.start, r.globalChanged = now, false
}

// changedGlobal: an afterAll hook changed global values in this reload.
func (r *reloadState) changedGlobal() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.globalChanged = true
}

// end finishes a reload: how long it took, whether it was the first, and
// whether afterAll hooks changed global values (everything reloads).
func (r *reloadState) end(now time.Time) (took time.Duration, first, again bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	first = !r.ready.Swap(true)
	if first {
		close(r.convergedLocked())
	}
	return now.Sub(r.start), first, r.globalChanged
}

// convergedCh is closed when the first reload ended (the bindings start
// global hooks' schedules then).
func (r *reloadState) convergedCh() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.convergedLocked()
}

func (r *reloadState) convergedLocked() chan struct{} {
	if r.converged == nil {
		r.converged = make(chan struct{})
	}
	return r.converged
}

// converged: the first 'reload all modules' finished.
func (s *steps) converged() bool { return s.reload.ready.Load() }

// ordered returns the hooks with an ordered binding, by ORDER then name.
func ordered(hooks []*loader.Hook, binding string) []*loader.Hook {
	var out []*loader.Hook
	for _, h := range hooks {
		if _, ok := h.Config.Order(binding); ok {
			out = append(out, h)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, _ := out[i].Config.Order(binding)
		b, _ := out[j].Config.Order(binding)
		if a != b {
			return a < b
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// globalHookTasks: one task per global hook with the binding, in order.
// Each runs the hook of that name in the model current when it runs, so a
// retry after a tree change runs the new tree's hook.
func (s *steps) globalHookTasks(binding string) []*queue.Task {
	model, _ := s.trees.Current()
	var tasks []*queue.Task
	for _, h := range ordered(model.Global.Hooks, binding) {
		tasks = append(tasks, &queue.Task{
			Key:         queue.Key{Kind: kindGlobalHook, Hook: metrics.HookLabel(h), Binding: binding},
			Description: fmt.Sprintf("%s: %s", binding, h.Name),
			OnFailure:   func(err error, _ int) { s.report.failure("", err) },
			Do: func(ctx context.Context) error {
				h := currentHook(s.trees, s.modules, h)
				if h == nil {
					return nil // gone from the tree
				}
				res, err := s.run.RunHook(ctx, h, binding, s.bind.OrderedContext(h, binding), false)
				// patches applied before a later part of the run failed count
				if binding == loader.AfterAll && (res.ValuesChanged || res.ConfigChanged) {
					s.reload.changedGlobal()
				}
				return err
			},
		})
	}
	return tasks
}

// reloadAllTask is 'reload all modules' (docs/lifecycle.md, steps 3–8): it
// queues beforeAll hooks and discovery right after itself, preceded by the
// Synchronization of global hooks whose monitors do not run yet (step 2 at
// start-up; a new tree's added or changed hooks later).
func (s *steps) reloadAllTask() *queue.Task {
	return &queue.Task{
		Key:         queue.Key{Kind: kindReloadAll},
		Description: "reload all modules",
		Do: func(ctx context.Context) error {
			s.reload.begin(s.cfg.Now())
			var tasks []*queue.Task
			model, _ := s.trees.Current()
			if binding.HasKubernetes(model.Global.Hooks) {
				tasks = append(tasks, s.bind.GlobalSyncTask())
			}
			tasks = append(tasks, s.globalHookTasks(loader.BeforeAll)...)
			tasks = append(tasks, s.discoverTask())
			s.queues.Main().AddAfterCurrent(tasks...)
			return nil
		},
	}
}

// convergedTask ends a reload: the operator is ready after the first one,
// and if afterAll hooks changed global values, everything reloads (step 8).
func (s *steps) convergedTask() *queue.Task {
	return &queue.Task{
		Key:         queue.Key{Kind: kindConverged},
		Description: "all modules converged",
		Do: func(context.Context) error {
			took, first, again := s.reload.end(s.cfg.Now())
			s.metrics.Converged(first, took)
			s.logger.Info("converged", "seconds", took.Seconds(), "first", first)
			if again {
				s.logger.Info("afterAll hooks changed global values; reloading all modules")
				s.queues.Main().AddAfterCurrent(s.reloadAllTask())
			} else {
				s.report.outcome()
			}
			return nil
		},
	}
}
