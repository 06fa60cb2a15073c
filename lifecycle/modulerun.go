package lifecycle

import (
	"context"
	"fmt"

	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/lifecycle/taskkind"

	"github.com/addonops/addon-operator/internal/steptime"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

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
		Do: func(ctx context.Context) error {
			return s.finishRun(steptime.Start(ctx, s.metrics), name, startup)
		},
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

// finishRun runs a module, records the run's outcome and, when afterHelm
// hooks changed the module's values, runs the module again. ctx times the
// run's steps (steptime.Start).
func (s *moduleSteps) finishRun(ctx context.Context, name string, startup bool) error {
	o := s.runModuleRecovered(ctx, name, startup)
	err := s.rec.record(ctx, o)
	if o.Again {
		s.logger.Info("afterHelm hooks changed module values; running module again", "module", o.Module)
		s.queues.Main().AddAfterCurrent(s.moduleRunTask(o.Module, false))
	}
	steptime.Mark(ctx, steptime.Record)
	return err
}

// runModule runs the module's steps and says what happened; the recorder
// (record.go) sets its state and tells the rest.
func (s *moduleSteps) runModule(ctx context.Context, name string, startup bool) outcome {
	model, store := s.trees.Current()
	m := model.Module(name)
	if m == nil {
		return outcome{What: nothing, Module: name} // removed from the tree since the task was queued
	}
	s.modules.SetState(name, StateRunning, nil)
	steptime.Mark(ctx, steptime.Status)
	failed := outcome{What: moduleRunFailed, Module: name, Started: s.cfg.Now()}
	fail := func(err error) outcome { failed.Err = err; return failed }
	logger := s.logger.With("module", name)
	run := func(binding string) (bool, error) {
		changed := false
		for _, h := range ordered(m.Hooks, binding) {
			res, err := s.run.RunHook(ctx, h, binding, s.bind.OrderedContext(h, binding), false)
			if err != nil {
				return false, err
			}
			changed = changed || res.ValuesChanged || res.ConfigChanged
		}
		return changed, nil
	}
	if err := s.ensureCRDs(ctx, model, m); err != nil {
		return fail(err)
	}
	steptime.Mark(ctx, steptime.CRDs)
	if startup {
		if _, err := run(loader.OnStartup); err != nil {
			return fail(err)
		}
	}
	// kubernetes@Synchronization of hooks whose monitors do not run yet: at
	// start-up, when the module was enabled, or when a new tree changed them
	if err := s.bind.Synchronize(ctx, m.Hooks); err != nil {
		return fail(err)
	}
	steptime.Mark(ctx, steptime.Sync)
	if m.HasChart {
		// the release's read runs beside the beforeHelm hooks
		s.helm.ReadAhead(name)
	}
	if _, err := run(loader.BeforeHelm); err != nil {
		return fail(err)
	}
	var deployed kube.Result // for health
	if m.HasChart {
		if err := store.CheckHelmValues(m.Key); err != nil {
			// the same values fail again: the next change runs the module
			return fail(queue.Terminal(reasonValuesRefused, fmt.Errorf("module %s: values for Helm: %w", name, err)))
		}
		// charts read global.enabledModules as hooks do (docs/operator.md, "Helm releases")
		vals, err := store.ModuleValues(m.Key, s.modules.EnabledList())
		if err != nil {
			return fail(err)
		}
		// the mode and revision of the tree running now: an edit or a
		// tree adopted since the run started counts
		now := s.trees.Load()
		inMaintenance, err := runstate.Maintenance(now.ConfigData, m)
		if err != nil {
			return fail(err)
		}
		s.metrics.Maintenance.WithLabelValues(name).Set(map[bool]float64{true: 1}[inMaintenance])
		steptime.Mark(ctx, steptime.Values)
		start := s.cfg.Now()
		res, err := s.helm.Upgrade(ctx, kube.Release{Name: name, Key: m.Key, ChartDir: m.Dir, Files: model.ChartFS(m), ChartHash: m.Hash, Exclude: m.BatchExecutables(), Values: vals, Commit: now.Rev.Commit, Maintenance: inMaintenance})
		s.metrics.HelmUpgraded(name, metrics.ModuleActivation(startup), s.cfg.Now().Sub(start), err == nil && res.Upgraded)
		if s.conflict(ctx, name, err) {
			return fail(queue.Terminal(reasonReleaseConflict, err))
		}
		if err != nil {
			return fail(err)
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
		steptime.Mark(ctx, steptime.HelmAfter)
	}
	changed, err := run(loader.AfterHelm)
	if err != nil {
		return fail(err)
	}
	// onStartup ran: the module's schedules may start (bindings read it)
	s.modules.Update(name, func(st *runstate.Module) { st.StartupDone = true })
	return outcome{What: moduleRan, Module: name, Release: deployed, Started: failed.Started, Again: changed}
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
