package lifecycle

import (
	"context"

	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/lifecycle/taskkind"

	"github.com/addonops/addon-operator/values"
)

// onConfigChange: ConfigMap events (docs/lifecycle.md, step 16). Bad values
// (refused by the schemas or a module's settings check) are logged and
// nothing is queued; the current state stays. Data older than what the
// store holds (a hook's write whose echo comes late) is ignored. The runs
// it queues pre-empt a failing task.
func (s *steps) onConfigChange(ctx context.Context, data map[string]string, version string) {
	if s.holdConfig(data, version) {
		return
	}
	before, model, ch, ok, err := s.checks.set(ctx, data, version)
	if err != nil && ctx.Err() != nil {
		// shutting down: the check was cut short, nothing was refused
		return
	}
	if err != nil {
		s.metrics.ConfigRefused()
		s.logger.Error("ConfigMap change refused; keeping the current values", "err", err)
		return
	}
	if !ok {
		return
	}
	logDropped(s.logger, "the ConfigMap changed", ch.Dropped)
	// a module's maintenance mode is not values: its run applies it; an
	// edit of a mode git sets changes nothing (config drift)
	if model != nil {
		after, _, err := runstate.Effective(model, data)
		if err != nil {
			after = data // SetConfig overlaid the same data on the same model
		}
		for _, name := range runstate.MaintenanceChanged(model, before, after) {
			ch.Modules = append(ch.Modules, model.Module(name).Key)
		}
	}
	if ch.Empty() {
		return
	}
	main := s.queues.Main()
	if ch.Global || ch.Enabled {
		s.logger.Info("global values or enabled flags changed; reloading all modules")
		s.preemptReload()
		return
	}
	for _, key := range ch.Modules {
		name := values.ModuleName(key)
		if s.modules.Get(name).ConfigRefused {
			// discovery refused it for this section: judge it again
			// (the module is not run before, with a section that may
			// still be bad)
			s.logger.Info("the section of a module refused by discovery changed; reloading all modules", "module", name)
			s.preemptReload()
			return
		}
	}
	for _, key := range ch.Modules {
		name := values.ModuleName(key)
		st := s.modules.Get(name)
		if st.Enabled {
			s.logger.Info("module values changed; running module", "module", name)
			// its run replaces one waiting alone or in a weight group
			main.Preempt(s.mods.moduleRunTask(name, !st.StartupDone), taskkind.Superseding(taskkind.ModuleRun, name))
		}
	}
}

// queueModuleRun queues a run of the module at the tail (one waiting there
// takes it).
func (s *steps) queueModuleRun(name string) {
	s.queues.Main().Add(s.mods.moduleRunTask(name, false))
}
