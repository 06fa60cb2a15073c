package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
	"github.com/addonops/addon-operator/values"
)

const (
	kindReloadTree    queue.Kind = "ReloadTree"
	kindReloadChanged queue.Kind = "ReloadChangedModules"
)

// modelOf is the model a revision was checked with (CheckTree's, which
// gitsync carries opaque in Checked): it is the one that runs, and the
// commit recorded on releases and in /status is the one it came from.
// None (a working copy) means the configured directories are loaded when
// the revision is adopted.
func modelOf(rev gitsync.Revision) (*loader.Model, error) {
	switch m := rev.Checked.(type) {
	case nil:
		return nil, nil
	case *loader.Model:
		return m, nil
	}
	return nil, fmt.Errorf("revision %s was checked as a %T, not a module tree", rev.Commit, rev.Checked)
}

// resolve follows symlinks so a model's paths stay valid if a link in
// the configured directories moves on; a missing path is kept as is.
func resolve(p string) string {
	if p == "" {
		return ""
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// load reads the tree at the configured directories (no-git mode).
func (s *steps) load(ctx context.Context) (*loader.Model, error) {
	return s.loader.Load(ctx, resolve(s.cfg.Root), resolve(s.cfg.ModulesDir), resolve(s.cfg.GlobalHooksDir))
}

// TreeChanged hands the operator a new revision: a git revision that was
// checked and published, or a working copy that was saved. Before Run it
// is the revision Run starts with; afterwards its reload goes to the head
// of "main", ahead of a task that keeps failing (docs/operator.md, "Changes
// pre-empt failures"), and replaces a reload of an older revision still
// waiting there.
func (o *Operator) TreeChanged(rev gitsync.Revision) {
	o.c.mu.Lock()
	o.c.incoming = &rev
	// a newer revision replaces one the purge guard refused
	o.c.purgeRefused = nil
	queues := o.c.queues
	o.c.mu.Unlock()
	if queues == nil {
		return
	}
	queues.Main().Preempt(&queue.Task{
		Kind:        kindReloadTree,
		Description: "load the changed tree " + rev.Commit,
		Do:          func(ctx context.Context) error { return o.steps.reloadTree(ctx, rev) },
	}, func(t *queue.Task) bool { return t.Kind == kindReloadTree })
}

// InUse lists the commits whose checkouts the operator may still read:
// the adopted revision, the one before it (its hooks may still be running
// in named queues), the newest revision not yet adopted, and one the purge
// guard refused (a confirmation loads it). The git
// syncer keeps these on disk.
func (o *Operator) InUse() []string {
	o.c.mu.Lock()
	defer o.c.mu.Unlock()
	var out []string
	for _, c := range []string{o.c.rev.Commit, o.c.prevCommit} {
		if c != "" {
			out = append(out, c)
		}
	}
	for _, r := range []*gitsync.Revision{o.c.incoming, o.c.purgeRefused} {
		if r != nil && r.Commit != "" {
			out = append(out, r.Commit)
		}
	}
	return out
}

// CheckTree loads the tree under root (modulesDir and globalHooksDir are
// relative to it) and checks the ConfigMap's current data against its
// schemas, without adopting it: the git syncer's check before it publishes
// a revision, on a leader and on a standby alike. The model it returns is
// the one that runs once the revision is adopted.
func (o *Operator) CheckTree(ctx context.Context, root, modulesDir, globalHooksDir string) (*loader.Model, error) {
	model, err := o.steps.loader.Load(ctx, root, filepath.Join(root, modulesDir), filepath.Join(root, globalHooksDir))
	if err != nil {
		return nil, err
	}
	store, _, err := values.NewStore(model.Values)
	if err != nil {
		return nil, err
	}
	data, err := o.backend.Get(ctx)
	if err != nil {
		return nil, err
	}
	if err := store.CheckConfig(data); err != nil {
		return nil, fmt.Errorf("its schemas refuse the current ConfigMap: %w", err)
	}
	if err := checkMaintenance(model, data); err != nil {
		return nil, fmt.Errorf("the current ConfigMap does not suit it: %w", err)
	}
	return model, nil
}

// TreeError is the last refused tree's error ("" when the last load worked).
func (o *Operator) TreeError() string {
	o.c.mu.Lock()
	defer o.c.mu.Unlock()
	return o.c.treeError
}

// reloadTree adopts a revision when its tree loads and its schemas accept
// the current configuration; otherwise the previous model stays in force
// and the error is kept for /status. A revision older than one reported
// since is skipped: the newer one's reload follows.
func (s *steps) reloadTree(ctx context.Context, rev gitsync.Revision) error {
	s.mu.Lock()
	stale := s.incoming != nil && *s.incoming != rev
	s.mu.Unlock()
	if stale {
		return nil
	}
	model, err := modelOf(rev)
	if err == nil && model == nil {
		model, err = s.load(ctx)
	}
	if err == nil {
		err = s.adopt(ctx, rev, model)
	}
	s.mu.Lock()
	if s.incoming != nil && *s.incoming == rev {
		s.incoming = nil
	}
	s.treeError = ""
	if err != nil {
		s.treeError = err.Error()
	}
	s.mu.Unlock()
	if err != nil {
		s.metrics.treeRefused()
		s.logger.Error("changed tree refused; keeping the previous one", "revision", rev.Commit, "err", err)
		reason := "the operator refused its tree; the previous revision keeps running (see /status)"
		if errors.Is(err, errPurgeGuard) {
			reason = "held by the purge guard until confirmed (see /status)"
		}
		s.reportRevision(rev.Commit, "", RevisionFailed, reason)
	}
	return nil // a bad tree waits for the next change, not for a retry
}

// adopt swaps in the revision's model and a values store built from it,
// the current ConfigMap data and the temporary patches, all under one lock:
// a ConfigMap change or a values patch cannot land in the old store after
// it was copied (docs/operator.md, "One state transition at a time").
// Removed modules alone are purged; changes inside modules alone run those
// modules; any other change reloads all modules.
func (s *steps) adopt(ctx context.Context, rev gitsync.Revision, model *loader.Model) error {
	store, _, err := values.NewStore(model.Values)
	if err != nil {
		return err
	}
	s.mu.Lock()
	old, oldStore := s.model, s.store
	enabled := slices.Clone(s.enabledModules)
	s.mu.Unlock()
	diff := loader.Compare(old, model)
	purged := slices.DeleteFunc(slices.Clone(diff.Removed), func(m string) bool { return !slices.Contains(enabled, m) })
	if err := s.checkPurge(rev.Commit, rev.Commit, purged, len(enabled)); err != nil {
		s.mu.Lock()
		s.purgeRefused = &rev
		s.mu.Unlock()
		s.purgeRefusedEvent(ctx, rev.Commit, err)
		return err
	}
	// only adopt changes the model, and it runs in "main", one at a time
	s.mu.Lock()
	if diff.Empty() && rev.Commit == s.rev.Commit {
		s.mu.Unlock()
		return nil
	}
	if _, err := store.SetConfig(s.configData); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("the new tree's schemas refuse the current ConfigMap: %w", err)
	}
	if err := checkMaintenance(model, s.configData); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("the current ConfigMap does not suit the new tree: %w", err)
	}
	dropped := store.RestorePatches(oldStore.Patches())
	s.prevCommit = s.rev.Commit
	s.model, s.store, s.rev = model, store, gitsync.Revision{Commit: rev.Commit, Ref: rev.Ref, Dir: rev.Dir}
	s.metrics.bindingsOf(model)
	var purges []*queue.Task
	if diff.OnlyRemoved() {
		for _, name := range diff.Removed {
			delete(s.modules, name)
			s.enabledModules = slices.DeleteFunc(s.enabledModules, func(m string) bool { return m == name })
			purges = append(purges, s.modulePurgeTask(name))
		}
	}
	s.mu.Unlock()
	s.reportRevision(rev.Commit, "", RevisionApplying, "")
	s.logDropped("the tree changed", dropped)
	// the old tree's schedules and monitors stop; new ones start as modules run
	s.bind.syncSchedules()
	s.bind.syncMonitors()
	main := s.queues.Main()
	switch {
	case len(purges) > 0:
		s.logger.Info("tree changed: purging removed modules", "revision", rev.Commit, "removed", diff.Removed)
		main.AddAfterCurrent(append(purges, s.revisionAppliedTask())...)
	case diff.Empty():
		// the same files (a re-tag, a revert): nothing to run
		s.logger.Info("tree changed: the same files; nothing to run", "revision", rev.Commit)
		if !s.reloading() {
			s.reportOutcome()
		}
	case s.moduleScoped(diff):
		s.logger.Info("tree changed: running the changed modules", "revision", rev.Commit, "changed", diff.Changed)
		main.Preempt(s.changedModulesTask(old, model, diff.Changed), func(t *queue.Task) bool {
			name, _ := t.Payload.(string)
			return t.Kind == kindModuleRun && slices.Contains(diff.Changed, name)
		})
	default:
		s.logger.Info("tree changed: reloading all modules", "revision", rev.Commit, "added", diff.Added, "removed", diff.Removed, "changed", diff.Changed, "global", diff.Global, "reordered", diff.Reordered)
		main.Preempt(s.reloadAllTask(), supersededByReload)
	}
	return nil
}

// moduleScoped: the new tree differs from the adopted one only inside
// some modules' directories, and no reload is under way whose steps would
// run them anyway (docs/operator.md, "Module-scoped reloads").
func (s *steps) moduleScoped(diff loader.Diff) bool {
	if len(diff.Changed) == 0 || len(diff.Added) > 0 || len(diff.Removed) > 0 || diff.Global || diff.Reordered || !s.converged() {
		return false
	}
	main := s.queues.Main()
	for _, kind := range []queue.Kind{kindReloadAll, kindDiscover, kindConverged} {
		if main.HasQueued(kind) {
			return false
		}
	}
	return true
}

// changedModulesTask runs the modules a tree change touched: discovery
// first, and if it enables exactly the modules enabled now, those modules
// (with onStartup when their hooks changed) and the afterAll hooks;
// otherwise 'reload all modules'.
func (s *steps) changedModulesTask(old, model *loader.Model, changed []string) *queue.Task {
	hooksChanged := map[string]bool{}
	for _, name := range changed {
		hooksChanged[name] = !sameHooks(old.Module(name), model.Module(name))
	}
	return &queue.Task{
		Kind:        kindReloadChanged,
		Description: "run changed modules: " + strings.Join(changed, ", "),
		Do: func(ctx context.Context) error {
			// the model current when it runs: a newer tree's own task
			// covers what changed since
			model, store := s.current()
			current := s.enabledList()
			enabled, failed, err := s.run.resolveEnabled(ctx, model, store, func(name string) bool { return slices.Contains(current, name) })
			if err != nil {
				return err
			}
			main := s.queues.Main()
			s.mu.Lock()
			// a failed enabled script is discovery's to handle
			if len(failed) > 0 || !slices.Equal(enabled, s.enabledModules) {
				s.mu.Unlock()
				s.logger.Info("the changed modules change the enabled set; reloading all modules", "enabled", strings.Join(enabled, ","))
				main.AddAfterCurrent(s.reloadAllTask())
				return nil
			}
			s.reloadStart = s.cfg.Now()
			s.globalChanged = false
			var runs []moduleRun
			for _, m := range model.Modules {
				st := s.modules[m.Name]
				if st == nil || !st.enabled || !slices.Contains(changed, m.Name) {
					continue
				}
				st.state = StatePending
				runs = append(runs, moduleRun{module: m, startup: hooksChanged[m.Name] || !st.startupDone})
			}
			s.mu.Unlock()
			if len(runs) == 0 {
				s.logger.Info("no enabled module changed")
				s.reportOutcome()
				return nil
			}
			tasks := s.moduleRunTasks(runs)
			tasks = append(tasks, s.globalHookTasks(loader.AfterAll)...)
			main.AddAfterCurrent(append(tasks, s.convergedTask())...)
			return nil
		},
	}
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

// reloading: a reload is queued whose converged task reports the revision.
func (s *steps) reloading() bool {
	main := s.queues.Main()
	for _, kind := range []queue.Kind{kindReloadAll, kindReloadChanged, kindDiscover, kindConverged, kindRevisionApplied} {
		if main.HasQueued(kind) {
			return true
		}
	}
	return false
}

// revisionAppliedTask reports the revision once the tasks queued before
// it (a purge) are done.
func (s *steps) revisionAppliedTask() *queue.Task {
	return &queue.Task{
		Kind:        kindRevisionApplied,
		Description: "revision applied",
		Do: func(context.Context) error {
			s.reportOutcome()
			return nil
		},
	}
}
