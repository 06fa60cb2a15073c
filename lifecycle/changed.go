package lifecycle

import (
	"context"
	"slices"
	"strings"

	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/lifecycle/taskkind"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// changedModulesTask runs the modules a tree change touched: discovery
// first, and if it enables exactly the modules enabled now, those modules
// (with onStartup when their hooks changed) and the afterAll hooks;
// otherwise 'reload all modules'.
func (s *treeSteps) changedModulesTask(old, model *loader.Model, changed []string) *queue.Task {
	hooksChanged := map[string]bool{}
	for _, name := range changed {
		hooksChanged[name] = !sameHooks(old.Module(name), model.Module(name))
	}
	s.steps.phase.askChanged()
	return &queue.Task{
		Key:         queue.Key{Kind: taskkind.ReloadChanged},
		Description: "run changed modules: " + strings.Join(changed, ", "),
		Do: func(ctx context.Context) error {
			err := s.runChanged(ctx, changed, hooksChanged)
			if err == nil {
				s.steps.phase.changedDone()
			}
			return err
		},
	}
}

// runChanged is changedModulesTask's run.
func (s *treeSteps) runChanged(ctx context.Context, changed []string, hooksChanged map[string]bool) error {
	// the model current when it runs: a newer tree's own task
	// covers what changed since
	model, store := s.trees.Current()
	current := s.modules.EnabledList()
	enabled, failed, reasons, err := s.run.ResolveEnabled(ctx, model, store, func(name string) bool { return slices.Contains(current, name) })
	if err != nil {
		return err
	}
	main := s.queues.Main()
	// a failed enabled script is discovery's to handle, and so is a
	// section refused, or no longer refused, since it last ran; a
	// module still refused for its section stays as discovery left
	// it (not run below)
	refusedChanged := refusalsChanged(model, failed, func(name string) bool { return s.modules.Get(name).ConfigRefused })
	if refusedChanged || !slices.Equal(enabled, current) {
		s.logger.Info("the changed modules change the enabled set; reloading all modules", "enabled", strings.Join(enabled, ","))
		main.AddAfterCurrent(s.steps.reloadAllTask())
		return nil
	}
	// the same modules stay disabled, perhaps for new reasons
	s.modules.SetDisabledReasons(reasons)
	var runs []moduleRun
	s.modules.Edit(func(modules map[string]*runstate.Module, _ *[]string) {
		for _, m := range model.Modules {
			st := modules[m.Name]
			if st == nil || !st.Enabled || st.ConfigRefused || !slices.Contains(changed, m.Name) {
				continue
			}
			st.State = StatePending
			runs = append(runs, moduleRun{module: m, startup: hooksChanged[m.Name] || !st.StartupDone})
		}
	})
	if len(runs) == 0 {
		s.logger.Info("no enabled module changed")
		return s.rec.record(ctx, outcome{What: reloadEnded})
	}
	s.steps.phase.begin(phaseConverging, s.cfg.Now())
	tasks := s.mods.moduleRunTasks(runs)
	tasks = append(tasks, s.steps.globalHookTasks(loader.AfterAll)...)
	main.AddAfterCurrent(append(tasks, s.steps.convergedTask())...)
	return nil
}

// sameHooks: the two versions of a module have the same hook files.
func sameHooks(a, b *loader.Module) bool {
	if a == nil || b == nil || len(a.Hooks) != len(b.Hooks) {
		return false
	}
	for i := range a.Hooks {
		if a.Hooks[i].Name != b.Hooks[i].Name || a.Hooks[i].Hash != b.Hooks[i].Hash {
			return false
		}
	}
	return true
}

// configModules are the modules whose settings differ between two
// versions of the config data (a section, <module>Maintenance or
// <module>Drift); all is true when global values, an enabled flag or a
// key of no module changed, which a reload of all modules takes.
func configModules(model *loader.Model, before, after map[string]string) (modules []string, all bool) {
	byKey := map[string]string{}
	for _, m := range model.Modules {
		byKey[m.Key] = m.Name
		byKey[m.Key+"Maintenance"] = m.Name
		byKey[m.Key+"Drift"] = m.Name
	}
	for _, data := range []map[string]string{before, after} {
		for k := range data {
			if before[k] == after[k] {
				continue
			}
			name, ok := byKey[k]
			if !ok {
				return nil, true // global, a flag, or a key of no module
			}
			if !slices.Contains(modules, name) {
				modules = append(modules, name)
			}
		}
	}
	slices.Sort(modules)
	return modules, false
}
