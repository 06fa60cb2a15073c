package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
	"github.com/addonops/addon-operator/values"
)

// Task kinds, as /queue shows them.
const (
	kindGlobalHook   = "GlobalHookRun"
	kindReloadAll    = "ReloadAllModules"
	kindDiscover     = "DiscoverModules"
	kindModuleRun    = "ModuleRun"
	kindModuleDelete = "ModuleDelete"
	kindModulePurge  = "ModulePurge"
	kindConverged    = "ConvergeDone"
)

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
func (o *Operator) globalHookTasks(binding string) []*queue.Task {
	model, _ := o.current()
	var tasks []*queue.Task
	for _, h := range ordered(model.Global.Hooks, binding) {
		tasks = append(tasks, &queue.Task{
			Kind:        kindGlobalHook,
			Description: fmt.Sprintf("%s: %s", binding, h.Name),
			Payload:     binding,
			Do: func(ctx context.Context) error {
				h := o.currentHook(h)
				if h == nil {
					return nil // gone from the tree
				}
				res, err := o.runHook(ctx, h, binding, o.orderedContext(h, binding), false)
				if err != nil {
					return err
				}
				if binding == loader.AfterAll && (res.ValuesChanged || res.ConfigChanged) {
					o.mu.Lock()
					o.globalChanged = true
					o.mu.Unlock()
				}
				return nil
			},
		})
	}
	return tasks
}

// reloadAllTask is 'reload all modules' (docs/lifecycle.md, steps 3–8): it
// queues beforeAll hooks and discovery right after itself, preceded by the
// Synchronization of global hooks whose monitors do not run yet (step 2 at
// start-up; a new tree's added or changed hooks later).
func (o *Operator) reloadAllTask() *queue.Task {
	return &queue.Task{
		Kind:        kindReloadAll,
		Description: "reload all modules",
		Do: func(ctx context.Context) error {
			o.mu.Lock()
			o.reloadStart = o.cfg.Now()
			o.globalChanged = false
			o.mu.Unlock()
			var tasks []*queue.Task
			model, _ := o.current()
			if len(withKubernetes(model.Global.Hooks)) > 0 {
				tasks = append(tasks, o.globalSyncTask())
			}
			tasks = append(tasks, o.globalHookTasks(loader.BeforeAll)...)
			tasks = append(tasks, o.discoverTask())
			o.queues.Main().AddAfterCurrent(tasks...)
			return nil
		},
	}
}

// discoverTask is 'discover modules' (step 4): it resolves every module's
// enabled state and queues module runs, deletes and purges, afterAll hooks
// and the end of the reload, right after itself.
func (o *Operator) discoverTask() *queue.Task {
	return &queue.Task{
		Kind:        kindDiscover,
		Description: "discover modules",
		Do: func(ctx context.Context) error {
			model, store := o.current()
			releases, err := o.helm.Releases()
			if err != nil {
				return err
			}
			enabled, err := o.resolveEnabled(ctx, model, store)
			if err != nil {
				return err
			}
			o.logger.Info("modules discovered", "enabled", strings.Join(enabled, ","))

			// runs of enabled modules, then deletes of disabled ones, then
			// purges (docs/lifecycle.md, steps 5–7)
			var runs []moduleRun
			var deletes []*queue.Task
			o.mu.Lock()
			o.enabledModules = enabled
			for _, m := range model.Modules {
				st := o.modules[m.Name]
				if st == nil {
					st = &moduleState{state: StateDisabled}
					o.modules[m.Name] = st
				}
				if slices.Contains(enabled, m.Name) {
					if !st.enabled {
						st.startupDone, st.crdsHash = false, ""
					}
					st.enabled = true
					st.state = StatePending
					runs = append(runs, moduleRun{module: m, startup: !st.startupDone})
					continue
				}
				if st.enabled || slices.Contains(releases, m.Name) || o.hasRelease(m.Name) {
					deletes = append(deletes, o.moduleDeleteTask(m.Name))
				}
				st.enabled = false
			}
			for name := range o.modules {
				if model.Module(name) == nil {
					delete(o.modules, name)
				}
			}
			o.mu.Unlock()
			tasks := append(o.moduleRunTasks(runs), deletes...)
			var purged []string
			for _, r := range releases {
				if model.Module(r) == nil {
					purged = append(purged, r)
				}
			}
			_, commit := o.revisionInfo()
			err = o.checkPurge(commit, purged, len(enabled)+len(purged))
			o.mu.Lock()
			o.purgeError = ""
			if err != nil {
				o.purgeError = err.Error()
			}
			o.mu.Unlock()
			if err != nil {
				// the releases stay; everything else converges
				o.logger.Error("purge refused", "revision", commit, "err", err)
				purged = nil
			}
			for _, r := range purged {
				tasks = append(tasks, o.modulePurgeTask(r))
			}
			tasks = append(tasks, o.globalHookTasks(loader.AfterAll)...)
			tasks = append(tasks, o.convergedTask())
			o.queues.Main().AddAfterCurrent(tasks...)
			return nil
		},
	}
}

// resolveEnabled is step 4's decision: the merged enabled flag, then the
// enabled script, which sees the modules enabled before it.
func (o *Operator) resolveEnabled(ctx context.Context, model *loader.Model, store *values.Store) ([]string, error) {
	var enabled []string
	for _, m := range model.Modules {
		on := store.Enabled(m.Key)
		if on && m.EnabledScript != "" {
			var err error
			if on, err = o.runEnabledScript(ctx, store, m, slices.Clone(enabled)); err != nil {
				return nil, err
			}
		}
		if on {
			enabled = append(enabled, m.Name)
		}
	}
	return enabled, nil
}

// convergedTask ends a reload: the operator is ready after the first one,
// and if afterAll hooks changed global values, everything reloads (step 8).
func (o *Operator) convergedTask() *queue.Task {
	return &queue.Task{
		Kind:        kindConverged,
		Description: "all modules converged",
		Do: func(context.Context) error {
			o.mu.Lock()
			took := o.cfg.Now().Sub(o.reloadStart)
			first := !o.ready
			o.ready = true
			again := o.globalChanged
			o.mu.Unlock()
			o.metrics.convergence.Observe(took.Seconds())
			o.logger.Info("converged", "seconds", took.Seconds(), "first", first)
			o.syncSchedules()
			if again {
				o.logger.Info("afterAll hooks changed global values; reloading all modules")
				o.queues.Main().AddAfterCurrent(o.reloadAllTask())
			}
			return nil
		},
	}
}

// moduleRunTask is 'module run' (step 5). A failure retries the whole run;
// a run that started with onStartup keeps it until it succeeds (docs/lifecycle.md, step 5).
func (o *Operator) moduleRunTask(name string, startup bool) *queue.Task {
	desc := name
	if startup {
		desc += " (with onStartup)"
	}
	t := &queue.Task{
		Kind:        kindModuleRun,
		Description: desc,
		Payload:     name,
		OnFailure: func(err error, _ int) {
			o.metrics.moduleRunErrors.WithLabelValues(name).Inc()
			o.setState(name, StateFailed, err)
		},
		Do: func(ctx context.Context) error { return o.runModule(ctx, name, startup) },
	}
	if !startup {
		// a queued run of the same module covers a later request for one
		t.MergeKey, t.Merge = kindModuleRun+"/"+name, func(*queue.Task) {}
	}
	return t
}

func (o *Operator) runModule(ctx context.Context, name string, startup bool) error {
	model, store := o.current()
	m := model.Module(name)
	if m == nil {
		return nil // removed from the tree since the task was queued
	}
	o.setState(name, StateRunning, nil)
	logger := o.logger.With("module", name)
	run := func(binding string) (bool, error) {
		changed := false
		for _, h := range ordered(m.Hooks, binding) {
			res, err := o.runHook(ctx, h, binding, o.orderedContext(h, binding), false)
			if err != nil {
				return false, err
			}
			changed = changed || res.ValuesChanged || res.ConfigChanged
		}
		return changed, nil
	}
	if err := o.ensureCRDs(ctx, m); err != nil {
		return err
	}
	if startup {
		if _, err := run(loader.OnStartup); err != nil {
			return err
		}
	}
	// kubernetes@Synchronization of hooks whose monitors do not run yet: at
	// start-up, when the module was enabled, or when a new tree changed them
	if err := o.synchronize(ctx, m.Hooks); err != nil {
		return err
	}
	if _, err := run(loader.BeforeHelm); err != nil {
		return err
	}
	if m.HasChart {
		if err := store.CheckHelmValues(m.Key); err != nil {
			return fmt.Errorf("module %s: values for Helm: %w", name, err)
		}
		vals, err := store.HelmValues(m.Key)
		if err != nil {
			return err
		}
		inMaintenance, err := o.inMaintenance(m)
		if err != nil {
			return err
		}
		o.metrics.maintenance.WithLabelValues(name).Set(map[bool]float64{true: 1}[inMaintenance])
		start := o.cfg.Now()
		_, commit := o.revisionInfo()
		res, err := o.helm.Upgrade(ctx, kube.Release{Name: name, Key: m.Key, ChartDir: m.Dir, ChartHash: m.Hash, Values: vals, Commit: commit, Maintenance: inMaintenance})
		o.metrics.helmSeconds.WithLabelValues(name).Observe(o.cfg.Now().Sub(start).Seconds())
		if o.conflict(ctx, name, err) {
			o.setState(name, StateFailed, err)
			return nil
		}
		if err != nil {
			return err
		}
		o.resolved(name)
		if res.Upgraded {
			o.metrics.helmUpgrades.WithLabelValues(name).Inc()
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
	o.mu.Lock()
	if st := o.modules[name]; st != nil {
		st.startupDone = true
	}
	o.mu.Unlock()
	o.setState(name, StateReady, nil)
	o.syncSchedules()
	if changed {
		logger.Info("afterHelm hooks changed module values; running module again")
		o.queues.Main().AddAfterCurrent(o.moduleRunTask(name, false))
	}
	return nil
}

// moduleDeleteTask is 'module delete' (step 6): beforeDeleteHelm hooks when
// the module has a release, the uninstall, then afterDeleteHelm hooks.
func (o *Operator) moduleDeleteTask(name string) *queue.Task {
	return &queue.Task{
		Kind:        kindModuleDelete,
		Description: name,
		OnFailure: func(err error, _ int) {
			o.metrics.moduleRunErrors.WithLabelValues(name).Inc()
			o.setState(name, StateFailed, err)
		},
		Do: func(ctx context.Context) error {
			model, _ := o.current()
			m := model.Module(name)
			hooks := func(binding string) error {
				if m == nil {
					return nil
				}
				for _, h := range ordered(m.Hooks, binding) {
					if _, err := o.runHook(ctx, h, binding, o.orderedContext(h, binding), false); err != nil {
						return err
					}
				}
				return nil
			}
			// beforeDeleteHelm only when there is a release to delete; a
			// retry after the uninstall does not run it again
			exists, err := o.helm.Has(name)
			if err != nil {
				return err
			}
			if exists {
				if err := hooks(loader.BeforeDeleteHelm); err != nil {
					return err
				}
			}
			removed, err := o.helm.Uninstall(ctx, name)
			conflict := o.conflict(ctx, name, err)
			if err != nil && !conflict {
				return err
			}
			if removed {
				o.logger.Info("helm release deleted", "module", name)
			}
			if !conflict {
				o.resolved(name)
			}
			if err := hooks(loader.AfterDeleteHelm); err != nil {
				return err
			}
			o.setState(name, StateDisabled, err) // nil, or the conflict
			o.syncSchedules()
			o.syncMonitors()
			return nil
		},
	}
}

// modulePurgeTask is 'module purge' (step 7): a release of ours whose module
// directory is gone is uninstalled; no hooks run.
func (o *Operator) modulePurgeTask(name string) *queue.Task {
	return &queue.Task{
		Kind:        kindModulePurge,
		Description: name,
		Do: func(ctx context.Context) error {
			removed, err := o.helm.Uninstall(ctx, name)
			if err != nil {
				return err
			}
			if removed {
				o.logger.Info("helm release purged: its module is gone", "module", name)
			}
			return nil
		},
	}
}

// hasRelease: a disabled module has a release to delete that Releases
// does not list (the original addon-operator's). It reads the snapshot
// Releases just took; an error counts as no release, and the next
// discovery asks again.
func (o *Operator) hasRelease(name string) bool {
	ok, err := o.helm.Has(name)
	if err != nil {
		o.logger.Warn("could not read a module's release", "module", name, "err", err)
	}
	return ok
}

// ensureCRDs applies the module's crds/ before anything of it runs, as the
// original addon-operator does, when the module's files changed since they
// were last applied (always on its first run).
func (o *Operator) ensureCRDs(ctx context.Context, m *loader.Module) error {
	if o.cfg.CRDs == nil {
		return nil
	}
	o.mu.Lock()
	st := o.modules[m.Name]
	done := st != nil && st.crdsHash == m.Hash
	o.mu.Unlock()
	if done {
		return nil
	}
	n, err := o.cfg.CRDs.Ensure(ctx, m.Dir)
	if err != nil {
		return fmt.Errorf("module %s: apply CRDs: %w", m.Name, err)
	}
	if n > 0 {
		o.logger.Info("CRDs applied", "module", m.Name, "changed", n)
	}
	o.mu.Lock()
	if st := o.modules[m.Name]; st != nil {
		st.crdsHash = m.Hash
	}
	o.mu.Unlock()
	return nil
}
