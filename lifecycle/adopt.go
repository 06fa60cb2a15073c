package lifecycle

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/lifecycle/taskkind"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
	"github.com/addonops/addon-operator/values"
)

// Reasons of a refused tree (queue.TerminalError), as /status shows them.
const (
	// reasonTreeRefused: the tree did not load, or its schemas refuse
	// the current ConfigMap.
	reasonTreeRefused = "TreeRefused"
	// reasonPurgeRefused: the purge guard holds the modules it removes.
	reasonPurgeRefused = "PurgeRefused"
)

// reloadTree adopts a revision when its tree loads and its schemas accept
// the current configuration; otherwise it fails terminally and the
// previous model stays in force (treeRefused keeps the error for /status):
// a bad tree waits for the next change, not for a retry. A revision older
// than one reported since is skipped: the newer one's reload follows.
func (s *treeSteps) reloadTree(ctx context.Context, rev Revision) error {
	if s.revs.stale(rev) {
		return nil
	}
	model := rev.Model
	var err error
	if model == nil {
		model, err = s.load(ctx)
	}
	if err == nil {
		err = s.adopt(ctx, rev, model)
	}
	s.revs.done(rev, err == nil)
	if err != nil && queue.Reason(err) == "" {
		err = queue.Terminal(reasonTreeRefused, err)
	}
	return err
}

// treeRefused is a refused tree's failure path: the error and its reason
// for /status, the metric and the log.
func (s *treeSteps) treeRefused(rev Revision, err error) {
	if errors.Is(err, context.Canceled) {
		return // the operator is stopping: the tree was not judged
	}
	s.revs.refused(err)
	s.metrics.TreeRefused()
	s.logger.Error("changed tree refused; keeping the previous one", "revision", rev.Commit, "reason", queue.Reason(err), "err", err)
	// the commit status says so once, without the error's text
	// (docs/operator.md, "Commit status")
	reason := refusedReasonOf(err)
	if queue.Reason(err) == reasonPurgeRefused {
		reason = "held by the purge guard until confirmed (see /status)"
	}
	_ = s.rec.record(context.Background(), outcome{What: revisionRefused, Commit: rev.Commit, Reason: reason})
}

// adopt replaces the running tree with the revision's model, a values
// store admitted against the running ConfigMap data, and the temporary
// patches, in one transition: a ConfigMap change or a values patch cannot
// land in the old store after it was copied (docs/operator.md, "One state
// transition at a time"). Removed modules alone are purged; changes inside
// modules alone run those modules; any other change reloads all modules.
func (s *treeSteps) adopt(ctx context.Context, rev Revision, model *loader.Model) error {
	// only adopt changes the model, and it runs in "main", one at a time
	old, _ := s.trees.Current()
	enabled := s.modules.EnabledList()
	diff := loader.Compare(old, model)
	purged := slices.DeleteFunc(slices.Clone(diff.Removed), func(m string) bool { return !slices.Contains(enabled, m) })
	// and the modules its config in git disables (docs/operator.md,
	// "Config in git"): counted at review time, not at the discovery after
	if cur := s.trees.Load(); cur != nil {
		if eff, _, err := runstate.Effective(model, cur.ClusterData); err == nil {
			purged = appendNew(purged, configDisables(model, enabled, cur.ConfigData, eff))
		}
	}
	if err := s.purge.checkTree(rev, purged, len(enabled)); err != nil {
		s.purge.refusedEvent(ctx, rev.Commit, err)
		return queue.Terminal(reasonPurgeRefused, err)
	}
	var dropped []values.DroppedOp
	same, configChanged := false, false
	var configBefore, configAfter map[string]string
	err := s.trees.Transition(func(cur *runstate.Tree) (*runstate.Tree, error) {
		if same = diff.Empty() && rev.Commit == cur.Rev.Commit; same {
			return nil, nil
		}
		// the new tree's config in git over the cluster's data: what it
		// is admitted against and runs with
		eff, overrides, err := runstate.Effective(model, cur.ClusterData)
		if err != nil {
			return nil, refusal(rev.Dir, model.ModulesDirs, refusedLoad, err)
		}
		store, err := runstate.Admit(model, eff, cur.Store.Sections().Active())
		if err != nil {
			return nil, refusal(rev.Dir, model.ModulesDirs, refusedAdmit, err)
		}
		configChanged = !maps.Equal(eff, cur.ConfigData)
		configBefore, configAfter = cur.ConfigData, eff
		dropped = store.RestorePatches(cur.Store.Patches())
		return &runstate.Tree{Model: model, Store: store, Rev: gitsync.Revision{Commit: rev.Commit, Ref: rev.Ref, Dir: rev.Dir},
			PrevCommit: cur.Rev.Commit, ClusterData: cur.ClusterData, ConfigData: eff, Overrides: overrides, ConfigVersion: cur.ConfigVersion}, nil
	})
	if err != nil || same {
		return err
	}
	s.metrics.BindingsOf(model)
	_ = s.rec.record(ctx, outcome{What: revisionApplying, Commit: rev.Commit})
	var purges []*queue.Task
	if diff.OnlyRemoved() && !configChanged {
		s.modules.Edit(func(modules map[string]*runstate.Module, enabled *[]string) {
			for _, name := range diff.Removed {
				delete(modules, name)
				*enabled = slices.DeleteFunc(*enabled, func(m string) bool { return m == name })
				purges = append(purges, s.mods.modulePurgeTask(name))
			}
		})
	}
	logDropped(s.logger, "the tree changed", dropped)
	// the modules whose settings the config in git changed run as if
	// their files had (docs/operator.md, "Config in git")
	scoped, all := diff, false
	if configChanged {
		var modules []string
		modules, all = configModules(model, configBefore, configAfter)
		scoped.Changed = appendNew(slices.Clone(diff.Changed), modules)
	}
	main := s.queues.Main()
	switch {
	case len(purges) > 0:
		s.logger.Info("tree changed: purging removed modules", "revision", rev.Commit, "removed", diff.Removed)
		main.AddAfterCurrent(append(purges, s.revisionAppliedTask())...)
	case configChanged && !all && s.moduleScoped(scoped):
		s.logger.Info("tree changed: the cluster's config changed; running the changed modules", "revision", rev.Commit, "changed", scoped.Changed)
		main.Preempt(s.changedModulesTask(old, model, scoped.Changed), taskkind.Superseding(taskkind.ReloadChanged, scoped.Changed...))
	case configChanged:
		// global values or flags changed with the revision (or a reload
		// is under way): a reload runs every module with them and
		// reports the revision at its end
		s.logger.Info("tree changed: the cluster's config changed; reloading all modules", "revision", rev.Commit, "added", diff.Added, "removed", diff.Removed, "changed", diff.Changed)
		s.steps.preemptReload()
	case diff.Empty():
		// the same files (a re-tag, a revert): nothing to run
		s.logger.Info("tree changed: the same files; nothing to run", "revision", rev.Commit)
		if !s.reloading() {
			_ = s.rec.record(ctx, outcome{What: reloadEnded})
		}
	case s.moduleScoped(diff):
		s.logger.Info("tree changed: running the changed modules", "revision", rev.Commit, "changed", diff.Changed)
		main.Preempt(s.changedModulesTask(old, model, diff.Changed), taskkind.Superseding(taskkind.ReloadChanged, diff.Changed...))
	default:
		s.logger.Info("tree changed: reloading all modules", "revision", rev.Commit, "added", diff.Added, "removed", diff.Removed, "changed", diff.Changed, "global", diff.Global, "reordered", diff.Reordered)
		s.steps.preemptReload()
	}
	return nil
}

// moduleScoped: the new tree differs from the adopted one only inside
// some modules' directories, and no reload is under way whose steps would
// run them anyway (docs/operator.md, "Module-scoped reloads").
func (s *treeSteps) moduleScoped(diff loader.Diff) bool {
	if len(diff.Changed) == 0 || len(diff.Added) > 0 || len(diff.Removed) > 0 || diff.Global || diff.Reordered || !s.steps.converged() {
		return false
	}
	return !s.steps.phase.underWay()
}

// reloading: a reload or a report is under way or waits whose end reports
// the revision.
func (s *treeSteps) reloading() bool { return s.steps.phase.reporting() }

// revisionAppliedTask reports the revision once the tasks queued before
// it (a purge) are done.
func (s *treeSteps) revisionAppliedTask() *queue.Task {
	s.steps.phase.askReport()
	return &queue.Task{
		Key:         queue.Key{Kind: taskkind.RevisionApplied},
		Description: "revision applied",
		Do: func(ctx context.Context) error {
			s.steps.phase.reported()
			return s.rec.record(ctx, outcome{What: reloadEnded})
		},
	}
}
