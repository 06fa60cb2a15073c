package lifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"sort"

	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/lifecycle/taskkind"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
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
	run     *runner
	checks  *settingsChecks // settingscheck.go
	bind    *bindings
	helm    Helm
	mods    *moduleSteps
	purge   *purgeGuard       // purge.go
	drift   *driftSteps       // drift.go
	rec     *recorder         // the outcomes (record.go)
	phase   *reloadPhase      // the reload's phase (phase.go)
}

var _ followUps = (*steps)(nil)

// converged: the first 'reload all modules' finished.
func (s *steps) converged() bool { return s.phase.converged() }

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
			Key:         queue.Key{Kind: taskkind.GlobalHook, Hook: metrics.HookLabel(h), Binding: binding},
			Description: fmt.Sprintf("%s: %s", binding, h.Name),
			OnFailure:   func(err error, _ int) { _ = s.rec.record(context.Background(), outcome{What: globalHookFailed, Err: err}) },
			Do: func(ctx context.Context) error {
				h := currentHook(s.trees, s.modules, h)
				if h == nil {
					return nil // gone from the tree
				}
				res, err := s.run.runHook(ctx, h, binding, s.bind.orderedContext(h, binding), false)
				// patches applied before a later part of the run failed count
				if binding == loader.AfterAll && (res.ValuesChanged || res.ConfigChanged) {
					s.phase.changedGlobal()
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
	s.phase.askReload() // every caller queues it
	return &queue.Task{
		Key:         queue.Key{Kind: taskkind.ReloadAll},
		Description: "reload all modules",
		Do: func(ctx context.Context) error {
			s.phase.begin(PhaseReloading, s.cfg.Now())
			var tasks []*queue.Task
			model, _ := s.trees.Current()
			if len(withKubernetes(model.Global.Hooks)) > 0 {
				tasks = append(tasks, s.bind.globalSyncTask())
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
		Key:         queue.Key{Kind: taskkind.Converged},
		Description: "all modules converged",
		Do: func(ctx context.Context) error {
			took, first, again := s.phase.end(s.cfg.Now())
			s.metrics.Converged(first, took)
			s.logger.Info("converged", "seconds", took.Seconds(), "first", first)
			s.bind.syncSchedules()
			if again {
				s.logger.Info("afterAll hooks changed global values; reloading all modules")
				s.queues.Main().AddAfterCurrent(s.reloadAllTask())
			} else {
				_ = s.rec.record(ctx, outcome{What: reloadEnded})
			}
			return nil
		},
	}
}
