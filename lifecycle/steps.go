package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/addonops/addon-operator/kube"
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
// (docs/lifecycle.md): start-up, 'reload all modules' (beforeAll,
// discovery, module runs, deletes and purges, afterAll), the reactions to
// a new revision and to ConfigMap changes, and auto-healing.
type steps struct {
	*core
	run    *runner
	bind   *bindings
	helm   Helm
	loader *loader.Loader
	drift  driftReports // the last drift checks (drift.go)
}

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
	model, _ := s.current()
	var tasks []*queue.Task
	for _, h := range ordered(model.Global.Hooks, binding) {
		tasks = append(tasks, &queue.Task{
			Kind:        kindGlobalHook,
			Description: fmt.Sprintf("%s: %s", binding, h.Name),
			Payload:     binding,
			Hook:        hookLabel(h), Binding: binding,
			OnFailure: func(err error, _ int) { s.reportFailure("", err) },
			Do: func(ctx context.Context) error {
				h := s.currentHook(h)
				if h == nil {
					return nil // gone from the tree
				}
				res, err := s.run.runHook(ctx, h, binding, s.bind.orderedContext(h, binding), false)
				// patches applied before a later part of the run failed count
				if binding == loader.AfterAll && (res.ValuesChanged || res.ConfigChanged) {
					s.mu.Lock()
					s.globalChanged = true
					s.mu.Unlock()
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
		Kind:        kindReloadAll,
		Description: "reload all modules",
		Do: func(ctx context.Context) error {
			s.mu.Lock()
			s.reloadStart = s.cfg.Now()
			s.globalChanged = false
			s.mu.Unlock()
			var tasks []*queue.Task
			model, _ := s.current()
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
		Kind:        kindConverged,
		Description: "all modules converged",
		Do: func(context.Context) error {
			s.mu.Lock()
			took := s.cfg.Now().Sub(s.reloadStart)
			first := !s.ready
			s.ready = true
			again := s.globalChanged
			s.mu.Unlock()
			s.metrics.converged(first, took)
			s.logger.Info("converged", "seconds", took.Seconds(), "first", first)
			s.bind.syncSchedules()
			if again {
				s.logger.Info("afterAll hooks changed global values; reloading all modules")
				s.queues.Main().AddAfterCurrent(s.reloadAllTask())
			} else {
				s.reportOutcome()
			}
			return nil
		},
	}
}

// moduleRunTask is 'module run' (step 5). A failure retries the whole run;
// a run that started with onStartup keeps it until it succeeds (docs/lifecycle.md, step 5).
func (s *steps) moduleRunTask(name string, startup bool) *queue.Task {
	desc := name
	if startup {
		desc += " (with onStartup)"
	}
	t := &queue.Task{
		Kind:        kindModuleRun,
		Description: desc,
		Payload:     name,
		Module:      name,
		OnFailure:   func(err error, _ int) { s.moduleFailed(name, err) },
		Do:          func(ctx context.Context) error { return s.runModule(ctx, name, startup) },
	}
	if !startup {
		// a queued run of the same module covers a later request for one
		t.MergeKey, t.Merge = string(kindModuleRun)+"/"+name, func(*queue.Task) {}
	}
	return t
}

func (s *steps) runModule(ctx context.Context, name string, startup bool) error {
	model, store := s.current()
	m := model.Module(name)
	if m == nil {
		return nil // removed from the tree since the task was queued
	}
	s.setState(name, StateRunning, nil)
	defer s.metrics.moduleRan(name, s.cfg.Now, s.cfg.Now())
	logger := s.logger.With("module", name)
	run := func(binding string) (bool, error) {
		changed := false
		for _, h := range ordered(m.Hooks, binding) {
			res, err := s.run.runHook(ctx, h, binding, s.bind.orderedContext(h, binding), false)
			if err != nil {
				return false, err
			}
			changed = changed || res.ValuesChanged || res.ConfigChanged
		}
		return changed, nil
	}
	if err := s.ensureCRDs(ctx, m); err != nil {
		return err
	}
	if startup {
		if _, err := run(loader.OnStartup); err != nil {
			return err
		}
	}
	// kubernetes@Synchronization of hooks whose monitors do not run yet: at
	// start-up, when the module was enabled, or when a new tree changed them
	if err := s.bind.synchronize(ctx, m.Hooks); err != nil {
		return err
	}
	if _, err := run(loader.BeforeHelm); err != nil {
		return err
	}
	var deployed kube.Result // for health
	if m.HasChart {
		if err := store.CheckHelmValues(m.Key); err != nil {
			return fmt.Errorf("module %s: values for Helm: %w", name, err)
		}
		vals, err := store.HelmValues(m.Key)
		if err != nil {
			return err
		}
		inMaintenance, err := s.inMaintenance(m)
		if err != nil {
			return err
		}
		s.metrics.maintenance.WithLabelValues(name).Set(map[bool]float64{true: 1}[inMaintenance])
		start := s.cfg.Now()
		_, commit := s.revisionInfo()
		res, err := s.helm.Upgrade(ctx, kube.Release{Name: name, Key: m.Key, ChartDir: m.Dir, ChartHash: m.Hash, Exclude: m.BatchExecutables(), Values: vals, Commit: commit, Maintenance: inMaintenance})
		s.metrics.helmUpgraded(name, moduleActivation(startup), s.cfg.Now().Sub(start), err == nil && res.Upgraded)
		if s.conflict(ctx, name, err) {
			s.setState(name, StateFailed, err)
			s.reportFailure(name, err)
			return nil
		}
		if err != nil {
			return err
		}
		s.resolved(name)
		deployed = res
		if res.Upgraded {
			logger.Info("helm release applied", "reason", res.Reason, "revision", res.Revision)
		} else if inMaintenance {
			logger.Info("maintenance mode: helm release left as it is", "revision", res.Revision)
		} else {
			logger.Debug("helm release unchanged", "revision", res.Revision)
		}
	}
	changed, err := run(loader.AfterHelm)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if st := s.modules[name]; st != nil {
		st.startupDone = true
	}
	s.mu.Unlock()
	s.setState(name, StateReady, nil)
	s.reportRevision(s.currentCommit(), name, RevisionApplied, "")
	s.healthDeployed(ctx, name, deployed)
	s.bind.syncSchedules()
	if changed {
		logger.Info("afterHelm hooks changed module values; running module again")
		s.queues.Main().AddAfterCurrent(s.moduleRunTask(name, false))
	}
	return nil
}

// moduleDeleteTask is 'module delete' (step 6): beforeDeleteHelm hooks when
// the module has a release, the uninstall, then afterDeleteHelm hooks.
func (s *steps) moduleDeleteTask(name string) *queue.Task {
	return &queue.Task{
		Kind:        kindModuleDelete,
		Description: name,
		OnFailure:   func(err error, _ int) { s.moduleDeleteFailed(name, err) },
		Do: func(ctx context.Context) error {
			model, _ := s.current()
			m := model.Module(name)
			hooks := func(binding string) error {
				if m == nil {
					return nil
				}
				for _, h := range ordered(m.Hooks, binding) {
					if _, err := s.run.runHook(ctx, h, binding, s.bind.orderedContext(h, binding), false); err != nil {
						return err
					}
				}
				return nil
			}
			// beforeDeleteHelm only when there is a release to delete; a
			// retry after the uninstall does not run it again
			exists, err := s.helm.Has(ctx, name)
			if err != nil {
				return err
			}
			if exists {
				if err := hooks(loader.BeforeDeleteHelm); err != nil {
					return err
				}
			}
			removed, err := s.helm.Uninstall(ctx, name)
			conflict := s.conflict(ctx, name, err)
			if err != nil && !conflict {
				return err
			}
			if removed {
				s.logger.Info("helm release deleted", "module", name)
			}
			// after a conflict nothing was deleted: no afterDeleteHelm,
			// and the module keeps the conflict as its error
			if !conflict {
				s.resolved(name)
				if err := hooks(loader.AfterDeleteHelm); err != nil {
					return err
				}
			}
			s.setState(name, StateDisabled, err)
			s.healthRemoved(name)
			s.bind.syncSchedules()
			s.bind.syncMonitors()
			return nil
		},
	}
}

// modulePurgeTask is 'module purge' (step 7): a release of ours whose module
// directory is gone is uninstalled; no hooks run.
func (s *steps) modulePurgeTask(name string) *queue.Task {
	return &queue.Task{
		Kind:        kindModulePurge,
		Description: name,
		Do: func(ctx context.Context) error {
			removed, err := s.helm.Purge(ctx, name)
			if err != nil {
				return err
			}
			s.metrics.releaseConflicts.DeleteLabelValues(name)
			s.healthRemoved(name)
			if removed {
				s.logger.Info("helm release purged: its module is gone", "module", name)
			}
			return nil
		},
	}
}

// hasRelease: a disabled module has a release to delete that Releases
// does not list (the original addon-operator's). It reads the snapshot
// Releases just took; an error counts as no release, and the next
// discovery asks again.
func (s *steps) hasRelease(ctx context.Context, name string) bool {
	ok, err := s.helm.Has(ctx, name)
	if err != nil {
		s.logger.Warn("could not read a module's release", "module", name, "err", err)
	}
	return ok
}

// ensureCRDs applies the module's crds/ before anything of it runs, as the
// original addon-operator does, when the module's files changed since they
// were last applied (always on its first run).
func (s *steps) ensureCRDs(ctx context.Context, m *loader.Module) error {
	if s.cfg.CRDs == nil {
		return nil
	}
	s.mu.Lock()
	st := s.modules[m.Name]
	done := st != nil && st.crdsHash == m.Hash
	s.mu.Unlock()
	if done {
		return nil
	}
	n, err := s.cfg.CRDs.Ensure(ctx, m.Name, m.Dir)
	if err != nil {
		return fmt.Errorf("module %s: apply CRDs: %w", m.Name, err)
	}
	if n > 0 {
		s.logger.Info("CRDs applied", "module", m.Name, "changed", n)
	}
	s.mu.Lock()
	if st := s.modules[m.Name]; st != nil {
		st.crdsHash = m.Hash
	}
	s.mu.Unlock()
	return nil
}

// moduleFailed records a failed module run: the module's state and
// addon_operator_module_run_errors_total (not for a run cut short by
// shutdown); moduleDeleteFailed, a failed delete.
func (s *steps) moduleFailed(name string, err error) {
	if !errors.Is(err, context.Canceled) {
		s.metrics.moduleFailed(name, false)
	}
	s.setState(name, StateFailed, err)
	s.reportFailure(name, err)
}

func (s *steps) moduleDeleteFailed(name string, err error) {
	if !errors.Is(err, context.Canceled) {
		s.metrics.moduleFailed(name, true)
	}
	s.setState(name, StateFailed, err)
	s.reportFailure(name, err)
}
