package lifecycle

import (
	"context"
	"slices"
	"strings"

	"github.com/addonops/addon-operator/lifecycle/hookrun"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/lifecycle/taskkind"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// discoverTask is 'discover modules' (step 4): it resolves every module's
// enabled state and queues module runs, deletes and purges, afterAll hooks
// and the end of the reload, right after itself.
func (s *steps) discoverTask() *queue.Task {
	return &queue.Task{Key: queue.Key{Kind: taskkind.Discover}, Description: "discover modules", Do: s.discover}
}

func (s *steps) discover(ctx context.Context) error {
	s.phase.enter(phaseDiscovering)
	t := s.trees.Load()
	model, store := t.Model, t.Store
	releases, err := s.helm.Releases(ctx)
	if err != nil {
		return err
	}
	// a module whose enabled script fails keeps the state it had: enabled
	// by the last discovery or, before the first one, while it has a release
	was := map[string]bool{}
	for name, st := range s.modules.All() {
		was[name] = st.Enabled
	}
	enabled, failed, reasons, err := s.run.ResolveEnabled(ctx, model, store, func(name string) bool {
		return was[name] || slices.Contains(releases, name)
	})
	if err != nil {
		return err
	}
	s.logger.Info("modules discovered", "enabled", strings.Join(enabled, ","))
	// from now on every ConfigMap is validated against these modules'
	// sections (admit); not a refused one's, whose section is bad: it
	// would refuse every edit that does not fix it
	keys := make([]string, 0, len(enabled))
	for _, name := range enabled {
		if !isConfigRefusal(failed[name]) {
			keys = append(keys, model.Module(name).Key)
		}
	}
	store.Sections().SetActive(keys)

	// disabled modules with a release Releases does not list (the
	// original addon-operator's), asked before taking the lock
	held := map[string]bool{}
	for _, m := range model.Modules {
		if !slices.Contains(enabled, m.Name) && !slices.Contains(releases, m.Name) && failed[m.Name] == nil {
			held[m.Name] = s.mods.hasRelease(ctx, m.Name)
		}
	}
	// runs of enabled modules, then deletes of disabled ones, then purges
	// (docs/lifecycle.md, steps 5–7)
	var runs []moduleRun
	// uninstalls: the deletes that remove a release, but those the
	// ConfigMap asks for by name, which the purge guard does not hold
	var deletes, uninstalls []string
	s.modules.Edit(func(modules map[string]*runstate.Module, enabledList *[]string) {
		*enabledList = enabled
		for _, m := range model.Modules {
			st := modules[m.Name]
			if st == nil {
				st = &runstate.Module{State: StateDisabled}
				modules[m.Name] = st
			}
			refused := isConfigRefusal(failed[m.Name])
			st.ScriptFailed = failed[m.Name] != nil && !refused
			st.ConfigRefused = refused
			st.DisabledReason = reasons[m.Name]
			switch {
			case st.ScriptFailed:
				// neither run nor deleted while its enabled state is unknown
			case refused:
				// neither run nor deleted, and enabled if it was
				// (resolveEnabled): what runs of it keeps running, with
				// the values the store holds, until its section is fixed
				// (onConfigChange reloads then)
			case slices.Contains(enabled, m.Name):
				if !st.Enabled {
					st.StartupDone, st.CRDsHash, st.Readiness = false, "", nil
				}
				st.Enabled = true
				st.State = StatePending
				runs = append(runs, moduleRun{module: m, startup: !st.StartupDone})
			case st.Enabled || slices.Contains(releases, m.Name) || held[m.Name]:
				deletes = append(deletes, m.Name)
				if (slices.Contains(releases, m.Name) || held[m.Name]) && !store.DisabledByConfig(m.Key) {
					uninstalls = append(uninstalls, m.Name)
				}
			}
		}
		for name := range modules {
			if model.Module(name) == nil {
				delete(modules, name)
			}
		}
	})
	s.modules.MarkDiscovered()
	retry := false
	for name, err := range failed {
		if isConfigRefusal(err) {
			s.logger.Error("module left as it was: its ConfigMap section does not match its config schema; it keeps its state until the section changes", "module", name, "err", err)
		} else {
			retry = true
			s.logger.Error("enabled script failed; the module keeps its state and is checked again", "module", name, "err", err)
		}
		_ = s.mods.rec.record(ctx, outcome{What: moduleRunFailed, Module: name, Err: err})
	}
	var purged []string
	for _, r := range releases {
		if model.Module(r) == nil {
			purged = append(purged, r)
		}
	}

	// every uninstall of this change passes the purge guard together
	commit := t.Rev.Commit
	token := commit
	if len(uninstalls) > 0 {
		token = planToken(commit, append(slices.Clone(uninstalls), purged...))
	}
	all := append(slices.Clone(uninstalls), purged...)
	err = s.purge.checkDiscovery(commit, token, all, len(enabled)+len(all))
	if err != nil {
		s.purge.refusedEvent(ctx, token, err)
		// the releases stay, and their modules as they were; everything
		// else converges
		deletes = slices.DeleteFunc(deletes, func(m string) bool { return slices.Contains(uninstalls, m) })
		purged = nil
	}
	for _, name := range deletes {
		s.modules.Update(name, func(st *runstate.Module) { st.Enabled = false })
	}

	tasks := s.mods.moduleRunTasks(runs)
	for _, name := range deletes {
		tasks = append(tasks, s.mods.moduleDeleteTask(name))
	}
	for _, r := range purged {
		tasks = append(tasks, s.mods.modulePurgeTask(r))
	}
	tasks = append(tasks, s.globalHookTasks(loader.AfterAll)...)
	tasks = append(tasks, s.convergedTask())
	if retry {
		tasks = append(tasks, s.enabledRetryTask())
	}
	s.phase.enter(phaseConverging)
	s.queues.Main().AddAfterCurrent(tasks...)
	return nil
}

// enabledRetryTask runs the enabled scripts again after a discovery in
// which some failed: it fails, and is retried with backoff, while one
// still fails; once they all answer, everything reloads, so the answers
// take effect through discovery and the purge guard.
func (s *steps) enabledRetryTask() *queue.Task {
	return &queue.Task{
		Key:         queue.Key{Kind: taskkind.EnabledRetry},
		Description: "enabled scripts that failed",
		Do: func(ctx context.Context) error {
			model, store := s.trees.Current()
			current := s.modules.EnabledList()
			var before []string // the modules enabled before each, as in discovery
			for _, m := range model.Modules {
				check := s.modules.Get(m.Name).ScriptFailed && m.EnabledScript != "" && store.Enabled(m.Key)
				if check {
					if _, _, err := s.run.RunEnabledScript(ctx, store, m, slices.Clone(before)); err != nil {
						return s.mods.rec.record(ctx, outcome{What: moduleRunFailed, Module: m.Name, Err: err})
					}
				}
				if slices.Contains(current, m.Name) {
					before = append(before, m.Name)
				}
			}
			s.logger.Info("enabled scripts answer again; reloading all modules")
			s.queues.Main().AddAfterCurrent(s.reloadAllTask())
			return nil
		},
	}
}

// refusalsChanged: the modules refused for their section (hookrun.ConfigRefusal
// in failed) are not those the last discovery marked configRefused, or
// failed holds another error (a failed enabled script), so discovery must
// judge the modules again; the same refusals leave the modules as they
// are.
func refusalsChanged(model *loader.Model, failed map[string]error, marked func(name string) bool) bool {
	for _, m := range model.Modules {
		err := failed[m.Name]
		if (err != nil && !isConfigRefusal(err)) || isConfigRefusal(err) != marked(m.Name) {
			return true
		}
	}
	return false
}

func isConfigRefusal(err error) bool { return hookrun.IsConfigRefusal(err) }
