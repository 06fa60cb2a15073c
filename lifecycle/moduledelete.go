package lifecycle

import (
	"context"

	"github.com/addonops/addon-operator/lifecycle/taskkind"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// moduleDeleteTask is 'module delete' (step 6): beforeDeleteHelm hooks when
// the module has a release, the uninstall, then afterDeleteHelm hooks.
func (s *moduleSteps) moduleDeleteTask(name string) *queue.Task {
	return &queue.Task{
		Key:         queue.Key{Kind: taskkind.ModuleDelete, Module: name},
		Description: name,
		Do:          func(ctx context.Context) error { return s.rec.record(ctx, s.deleteModule(ctx, name)) },
	}
}

// deleteModule deletes the module's release and says what happened. After
// a release conflict nothing was deleted: no afterDeleteHelm, and the
// module keeps the conflict as its error (a terminal one: the next
// discovery tries again).
func (s *moduleSteps) deleteModule(ctx context.Context, name string) outcome {
	failed := func(err error) outcome { return outcome{What: moduleDeleteFailed, Module: name, Err: err} }
	model, _ := s.trees.Current()
	m := model.Module(name)
	hooks := func(binding string) error {
		if m == nil {
			return nil
		}
		for _, h := range ordered(m.Hooks, binding) {
			if _, err := s.run.RunHook(ctx, h, binding, s.bind.OrderedContext(h, binding), false); err != nil {
				return err
			}
		}
		return nil
	}
	// beforeDeleteHelm only when there is a release to delete; a
	// retry after the uninstall does not run it again
	exists, err := s.helm.Has(ctx, name)
	if err != nil {
		return failed(err)
	}
	if exists {
		if err := hooks(loader.BeforeDeleteHelm); err != nil {
			return failed(err)
		}
	}
	removed, err := s.helm.Uninstall(ctx, name)
	conflict := s.conflict(ctx, name, err)
	if err != nil && !conflict {
		return failed(err)
	}
	if removed {
		s.logger.Info("helm release deleted", "module", name)
	}
	if !conflict {
		s.resolved(name)
		if err := hooks(loader.AfterDeleteHelm); err != nil {
			return failed(err)
		}
	}
	if conflict {
		return failed(queue.Terminal(reasonReleaseConflict, err))
	}
	return outcome{What: moduleDeleted, Module: name}
}

// hasRelease: a disabled module has a release to delete that Releases
// does not list (the original addon-operator's). It reads the snapshot
// Releases just took; an error counts as no release, and the next
// discovery asks again.
func (s *moduleSteps) hasRelease(ctx context.Context, name string) bool {
	ok, err := s.helm.Has(ctx, name)
	if err != nil {
		s.logger.Warn("could not read a module's release", "module", name, "err", err)
	}
	return ok
}
