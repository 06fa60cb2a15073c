package lifecycle

import (
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
	"github.com/addonops/addon-operator/values"
)

// onConfigChange: ConfigMap events (docs/lifecycle.md, step 16). Bad values
// are logged and nothing is queued; the current state stays. Data older
// than what the store holds (a hook's write whose echo comes late) is
// ignored. The runs it queues pre-empt a failing task.
func (s *steps) onConfigChange(data map[string]string, version string) {
	s.mu.Lock()
	before, model := s.configData, s.model
	s.mu.Unlock()
	ch, ok, err := s.setConfig(data, version)
	if err != nil {
		s.metrics.configRefused()
		s.logger.Error("ConfigMap change refused; keeping the current values", "err", err)
		return
	}
	if !ok {
		return
	}
	// a module's maintenance mode is not values: its run applies it
	if model != nil {
		for _, name := range maintenanceChanged(model, before, data) {
			ch.Modules = append(ch.Modules, model.Module(name).Key)
		}
	}
	if ch.Empty() {
		return
	}
	main := s.queues.Main()
	if ch.Global || ch.Enabled {
		s.logger.Info("global values or enabled flags changed; reloading all modules")
		main.Preempt(s.reloadAllTask(), supersededByReload)
		return
	}
	for _, key := range ch.Modules {
		name := values.ModuleName(key)
		s.mu.Lock()
		st := s.modules[name]
		enabled := st != nil && st.enabled
		startup := enabled && !st.startupDone
		s.mu.Unlock()
		if enabled {
			s.logger.Info("module values changed; running module", "module", name)
			main.Preempt(s.moduleRunTask(name, startup), func(t *queue.Task) bool {
				return t.Kind == kindModuleRun && t.Payload == name
			})
		}
	}
}

// supersededByReload: the work a 'reload all modules' replaces when it
// pre-empts: an earlier reload's steps and module runs still waiting. Module
// deletes and purges stay; discovery would not queue them again.
func supersededByReload(t *queue.Task) bool {
	switch t.Kind {
	case kindReloadAll, kindReloadChanged, kindDiscover, kindModuleRun, kindParallelRun, kindConverged, kindEnabledRetry, kindDriftCorrect:
		return true
	case kindGlobalHook:
		return t.Payload == loader.BeforeAll || t.Payload == loader.AfterAll
	}
	return false
}

// queueReloadAll queues 'reload all modules' at the tail unless one waits.
func (s *steps) queueReloadAll() {
	if !s.queues.Main().HasQueued(kindReloadAll) {
		s.queues.Main().Add(s.reloadAllTask())
	}
}
