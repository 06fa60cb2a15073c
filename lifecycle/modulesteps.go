package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/lifecycle/taskkind"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// moduleSteps are the steps of one module (docs/lifecycle.md, steps 5–7):
// 'module run' (its CRDs, hooks and Helm release, alone or in a weight
// group, parallel.go), 'module delete' and 'module purge', and what a
// failure of one records (release conflicts: conflict.go).
type moduleSteps struct {
	cfg     Config
	logger  *slog.Logger
	metrics *metrics.Recorder
	trees   *runstate.Trees
	modules *runstate.Modules
	queues  *runstate.Queues
	run     *runner
	bind    *bindings
	helm    Helm
	report  *revisionReporter // revisionstate.go
}

// moduleRunTask is 'module run' (step 5). A failure retries the whole run;
// a run that started with onStartup keeps it until it succeeds (docs/lifecycle.md, step 5).
func (s *moduleSteps) moduleRunTask(name string, startup bool) *queue.Task {
	desc := name
	if startup {
		desc += " (with onStartup)"
	}
	t := &queue.Task{
		Key:         moduleRunKey(name),
		Description: desc,
		Payload:     moduleRunPayload{startup: startup},
		OnFailure:   func(err error, _ int) { s.moduleFailed(name, err) },
		Do:          func(ctx context.Context) error { return s.runModule(ctx, name, startup) },
	}
	if !startup {
		// a queued run of the same module covers a later request for one
		// (one with onStartup does more, and is queued)
		t.Merge = func(later *queue.Task) bool {
			p, ok := later.Payload.(moduleRunPayload)
			return ok && later.Key == t.Key && !p.startup
		}
	}
	return t
}

// moduleRunKey is the key of a module's run, alone or in a weight group.
func moduleRunKey(name string) queue.Key { return queue.Key{Kind: taskkind.ModuleRun, Module: name} }

// moduleRunPayload is a module run's data: whether it runs onStartup.
type moduleRunPayload struct{ startup bool }

func (moduleRunPayload) TaskKind() queue.Kind { return taskkind.ModuleRun }

func (s *moduleSteps) runModule(ctx context.Context, name string, startup bool) error {
	model, store := s.trees.Current()
	m := model.Module(name)
	if m == nil {
		return nil // removed from the tree since the task was queued
	}
	s.modules.SetState(name, StateRunning, nil)
	defer s.metrics.ModuleRan(name, s.cfg.Now, s.cfg.Now())
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
	if err := s.ensureCRDs(ctx, model, m); err != nil {
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
			// the same values fail again: the next change runs the module
			return queue.Terminal(reasonValuesRefused, fmt.Errorf("module %s: values for Helm: %w", name, err))
		}
		// charts read global.enabledModules as hooks do (docs/operator.md, "Helm releases")
		vals, err := store.ModuleValues(m.Key, s.modules.EnabledList())
		if err != nil {
			return err
		}
		// the mode and revision of the tree running now: an edit or a
		// tree adopted since the run started counts
		now := s.trees.Load()
		inMaintenance, err := runstate.Maintenance(now.ConfigData, m)
		if err != nil {
			return err
		}
		s.metrics.Maintenance.WithLabelValues(name).Set(map[bool]float64{true: 1}[inMaintenance])
		start := s.cfg.Now()
		res, err := s.helm.Upgrade(ctx, kube.Release{Name: name, Key: m.Key, ChartDir: m.Dir, Files: model.ChartFS(m), ChartHash: m.Hash, Exclude: m.BatchExecutables(), Values: vals, Commit: now.Rev.Commit, Maintenance: inMaintenance})
		s.metrics.HelmUpgraded(name, metrics.ModuleActivation(startup), s.cfg.Now().Sub(start), err == nil && res.Upgraded)
		if s.conflict(ctx, name, err) {
			return queue.Terminal(reasonReleaseConflict, err)
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
	s.modules.Update(name, func(st *runstate.Module) { st.StartupDone = true })
	s.modules.SetState(name, StateReady, nil)
	s.report.revision(s.report.commit(), name, RevisionApplied, "")
	healthDeployed(ctx, s.cfg.Health, name, deployed)
	s.bind.syncSchedules()
	if changed {
		logger.Info("afterHelm hooks changed module values; running module again")
		s.queues.Main().AddAfterCurrent(s.moduleRunTask(name, false))
	}
	return nil
}

// moduleDeleteTask is 'module delete' (step 6): beforeDeleteHelm hooks when
// the module has a release, the uninstall, then afterDeleteHelm hooks.
func (s *moduleSteps) moduleDeleteTask(name string) *queue.Task {
	return &queue.Task{
		Key:         queue.Key{Kind: taskkind.ModuleDelete, Module: name},
		Description: name,
		OnFailure:   func(err error, _ int) { s.moduleDeleteFailed(name, err) },
		Do: func(ctx context.Context) error {
			model, _ := s.trees.Current()
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
			s.modules.SetState(name, StateDisabled, nil)
			healthRemoved(s.cfg.Health, name)
			s.bind.syncSchedules()
			s.bind.syncMonitors()
			if conflict {
				return queue.Terminal(reasonReleaseConflict, err)
			}
			return nil
		},
	}
}

// modulePurgeTask is 'module purge' (step 7): a release of ours whose module
// directory is gone is uninstalled; no hooks run.
func (s *moduleSteps) modulePurgeTask(name string) *queue.Task {
	return &queue.Task{
		Key:         queue.Key{Kind: taskkind.ModulePurge, Module: name},
		Description: name,
		Do: func(ctx context.Context) error {
			removed, err := s.helm.Purge(ctx, name)
			if err != nil {
				return err
			}
			s.metrics.ReleaseConflicts.DeleteLabelValues(name)
			if removed {
				s.logger.Info("helm release purged: its module is gone", "module", name)
			}
			healthRemoved(s.cfg.Health, name)
			return nil
		},
	}
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

// ensureCRDs applies the module's crds/ before anything of it runs, as the
// original addon-operator does, when the module's files changed since they
// were last applied (always on its first run).
func (s *moduleSteps) ensureCRDs(ctx context.Context, model *loader.Model, m *loader.Module) error {
	if s.cfg.CRDs == nil {
		return nil
	}
	if s.modules.Get(m.Name).CRDsHash == m.Hash {
		return nil
	}
	// through the loader's reader, as the chart is: a crds/ linked through
	// the tree root alias is read beneath the tree's root
	n, err := s.cfg.CRDs.Ensure(ctx, m.Name, m.Dir, model.ChartFS(m))
	if err != nil {
		return fmt.Errorf("module %s: apply CRDs: %w", m.Name, err)
	}
	if n > 0 {
		s.logger.Info("CRDs applied", "module", m.Name, "changed", n)
	}
	s.modules.Update(m.Name, func(st *runstate.Module) { st.CRDsHash = m.Hash })
	return nil
}

// Reasons of the terminal errors of module steps (queue.TerminalError),
// as /status shows them.
const (
	// reasonReleaseConflict: another tool owns the module's release name
	// (conflict.go); the next run of the module tries again.
	reasonReleaseConflict = "ReleaseConflict"
	// reasonValuesRefused: the module's values fail its schemas before
	// Helm; the next change of them runs the module again.
	reasonValuesRefused = "ValuesRefused"
)

// moduleFailed records a failed module run: the module's state and
// addon_operator_module_run_errors_total (not for a run cut short by
// shutdown, nor for a release conflict, which has its own gauge);
// moduleDeleteFailed, a failed delete, where a conflict leaves the module
// Disabled with its release in place.
func (s *moduleSteps) moduleFailed(name string, err error) {
	if !errors.Is(err, context.Canceled) && !errors.Is(err, kube.ErrNotOurs) {
		s.metrics.ModuleFailed(name, false)
	}
	s.modules.SetState(name, StateFailed, err)
	s.report.failure(name, err)
}

func (s *moduleSteps) moduleDeleteFailed(name string, err error) {
	if errors.Is(err, kube.ErrNotOurs) {
		s.modules.SetState(name, StateDisabled, err)
		return
	}
	if !errors.Is(err, context.Canceled) {
		s.metrics.ModuleFailed(name, true)
	}
	s.modules.SetState(name, StateFailed, err)
	s.report.failure(name, err)
}
