package lifecycle

import (
	"context"

	"github.com/addonops/addon-operator/lifecycle/binding"
	"github.com/addonops/addon-operator/lifecycle/taskkind"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

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
			s.phase.begin(phaseReloading, s.cfg.Now())
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
		Key:         queue.Key{Kind: taskkind.Converged},
		Description: "all modules converged",
		Do: func(ctx context.Context) error {
			took, first, again := s.phase.end(s.cfg.Now())
			s.metrics.Converged(first, took)
			s.logger.Info("converged", "seconds", took.Seconds(), "first", first)
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

// preemptReload puts 'reload all modules' at the head of "main", in place
// of the work it supersedes (taskkind.SupersededByReload): an earlier
// reload's steps and module runs still waiting.
func (s *steps) preemptReload() {
	s.queues.Main().Preempt(s.reloadAllTask(), taskkind.SupersededByReload)
}

// queueReloadAll queues 'reload all modules' at the tail unless one waits.
func (s *steps) queueReloadAll() {
	if !s.phase.reloadWaiting() {
		s.queues.Main().Add(s.reloadAllTask())
	}
}
