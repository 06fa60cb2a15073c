package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/lifecycle/taskkind"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
	"github.com/addonops/addon-operator/values"
)

// treeSteps are the steps of a new revision (docs/lifecycle.md, "A new
// revision"): load and admit its tree, adopt it past the purge guard, and
// run what changed: the removed modules' purges, the changed modules
// alone, or 'reload all modules'.
type treeSteps struct {
	cfg     Config
	logger  *slog.Logger
	metrics *metrics.Recorder
	trees   *runstate.Trees
	modules *runstate.Modules
	queues  *runstate.Queues
	run     *runner
	bind    *bindings
	loader  *loader.Loader
	steps   *steps
	mods    *moduleSteps
	purge   *purgeGuard
	rec     *recorder         // the outcomes (record.go)
	revs    revisions         // the revisions on the way
}

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
func (s *treeSteps) load(ctx context.Context) (*loader.Model, error) {
	return s.loader.Load(ctx, resolve(s.cfg.Root), resolve(s.cfg.ModulesDir), resolve(s.cfg.GlobalHooksDir))
}

// TreeChanged hands the operator a new revision: a git revision that was
// checked and published, or a working copy that was saved. Before Run it
// is the revision Run starts with; afterwards its reload goes to the head
// of "main", ahead of a task that keeps failing (docs/operator.md, "Changes
// pre-empt failures"), and replaces a reload of an older revision still
// waiting there.
func (o *Operator) TreeChanged(rev gitsync.Revision) {
	// a newer revision replaces one the purge guard refused
	o.purge.forgetRefused()
	queues := o.tree.revs.offer(rev, o.queues)
	if queues == nil {
		return
	}
	queues.Main().Preempt(&queue.Task{
		Key:         queue.Key{Kind: taskkind.ReloadTree},
		Description: "load the changed tree " + rev.Commit,
		Do:          func(ctx context.Context) error { return o.tree.reloadTree(ctx, rev) },
		OnFailure:   func(err error, _ int) { o.tree.treeRefused(rev, err) },
	}, taskkind.Superseding(taskkind.ReloadTree))
}

// InUse lists the commits whose checkouts the operator may still read:
// the adopted revision, the one before it (its hooks may still be running
// in named queues), the newest revision not yet adopted, and one the purge
// guard refused (a confirmation loads it). The git
// syncer keeps these on disk.
func (o *Operator) InUse() []string {
	var out []string
	if t := o.trees.Load(); t != nil {
		out = append(out, t.Rev.Commit, t.PrevCommit)
	}
	out = append(out, o.tree.revs.incomingCommit(), o.purge.refusedCommit())
	return slices.DeleteFunc(out, func(c string) bool { return c == "" })
}

// revisions are the steps' bookkeeping of the revisions on the way: the
// newest one reported and not yet adopted, and why the last changed tree
// was refused.
type revisions struct {
	mu         sync.Mutex
	incoming   *gitsync.Revision
	treeError  string
	treeReason string // its TerminalError's reason
}

// offer records a reported revision and returns the queues its reload
// goes to (nil before Run attached them: Run takes it then). The two
// steps share one lock with attach, so a revision reported while Run
// starts is taken by one or the other.
func (r *revisions) offer(rev gitsync.Revision, queues *runstate.Queues) *queue.Set {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.incoming = &rev
	return queues.Get()
}

// attach publishes Run's queues and returns a revision reported before
// (nil for none).
func (r *revisions) attach(set *queue.Set, queues *runstate.Queues) *gitsync.Revision {
	r.mu.Lock()
	defer r.mu.Unlock()
	queues.Set(set)
	return r.incoming
}

// takeIncoming is the revision Run starts with (zero: the configured
// directories).
func (r *revisions) takeIncoming() gitsync.Revision {
	r.mu.Lock()
	defer r.mu.Unlock()
	var rev gitsync.Revision
	if r.incoming != nil {
		rev, r.incoming = *r.incoming, nil
	}
	return rev
}

// incomingCommit is the commit of the newest revision not yet adopted.
func (r *revisions) incomingCommit() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.incoming == nil {
		return ""
	}
	return r.incoming.Commit
}

// stale: a newer revision than rev was reported since.
func (r *revisions) stale(rev gitsync.Revision) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.incoming != nil && *r.incoming != rev
}

// done: rev was judged; a success clears the last refusal.
func (r *revisions) done(rev gitsync.Revision, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.incoming != nil && *r.incoming == rev {
		r.incoming = nil
	}
	if ok {
		r.treeError, r.treeReason = "", ""
	}
}

// refused keeps a refused tree's error and reason for /status.
func (r *revisions) refused(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.treeError, r.treeReason = err.Error(), queue.Reason(err)
}

// treeStatus is the last refused tree's error and reason.
func (r *revisions) treeStatus() (err, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.treeError, r.treeReason
}

// CheckTree loads the tree under root (modulesDir and globalHooksDir are
// relative to it) and admits it against the ConfigMap data (admit, with
// admittedConfig's copy), without adopting it: the git syncer's check
// before it publishes a revision, on a leader and on a standby alike. The
// model it returns is the one that runs once the revision is adopted.
func (o *Operator) CheckTree(ctx context.Context, root, modulesDir, globalHooksDir string) (*loader.Model, error) {
	model, err := o.tree.loader.Load(ctx, root, filepath.Join(root, modulesDir), filepath.Join(root, globalHooksDir))
	if err != nil {
		var dirs []string
		for _, d := range filepath.SplitList(modulesDir) {
			dirs = append(dirs, filepath.Join(root, d))
		}
		return nil, refusal(root, dirs, refusedLoad, err)
	}
	data, err := o.admittedConfig(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := runstate.Admit(model, data, o.activeModules()); err != nil {
		return nil, refusal(root, model.ModulesDirs, refusedAdmit, err)
	}
	return model, nil
}

// Refused tells the commit status of a revision the git syncer refused
// before publishing it (CheckTree's error): failed, naming the file and
// module, for that commit alone; the running revision keeps its states
// (docs/operator.md, "Commit status").
func (o *Operator) Refused(commit string, err error) {
	if errors.Is(err, context.Canceled) {
		return // stopping: the tree was not judged
	}
	_ = o.tree.rec.record(context.Background(), outcome{What: revisionRefused, Commit: commit, Reason: refusedReasonOf(err)})
}

// TreeError is the last refused tree's error ("" when the last load worked).
func (o *Operator) TreeError() string {
	err, _ := o.tree.revs.treeStatus()
	return err
}

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
func (s *treeSteps) reloadTree(ctx context.Context, rev gitsync.Revision) error {
	if s.revs.stale(rev) {
		return nil
	}
	model, err := modelOf(rev)
	if err == nil && model == nil {
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
func (s *treeSteps) treeRefused(rev gitsync.Revision, err error) {
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
func (s *treeSteps) adopt(ctx context.Context, rev gitsync.Revision, model *loader.Model) error {
	// only adopt changes the model, and it runs in "main", one at a time
	old, _ := s.trees.Current()
	enabled := s.modules.EnabledList()
	diff := loader.Compare(old, model)
	purged := slices.DeleteFunc(slices.Clone(diff.Removed), func(m string) bool { return !slices.Contains(enabled, m) })
	if err := s.purge.checkTree(rev, purged, len(enabled)); err != nil {
		s.purge.refusedEvent(ctx, rev.Commit, err)
		return queue.Terminal(reasonPurgeRefused, err)
	}
	var dropped []values.DroppedOp
	same := false
	err := s.trees.Transition(func(cur *runstate.Tree) (*runstate.Tree, error) {
		if same = diff.Empty() && rev.Commit == cur.Rev.Commit; same {
			return nil, nil
		}
		store, err := runstate.Admit(model, cur.ConfigData, cur.Store.Sections().Active())
		if err != nil {
			return nil, refusal(rev.Dir, model.ModulesDirs, refusedAdmit, err)
		}
		dropped = store.RestorePatches(cur.Store.Patches())
		return &runstate.Tree{Model: model, Store: store, Rev: gitsync.Revision{Commit: rev.Commit, Ref: rev.Ref, Dir: rev.Dir},
			PrevCommit: cur.Rev.Commit, ConfigData: cur.ConfigData, ConfigVersion: cur.ConfigVersion}, nil
	})
	if err != nil || same {
		return err
	}
	s.metrics.BindingsOf(model)
	_ = s.rec.record(ctx, outcome{What: revisionApplying, Commit: rev.Commit})
	var purges []*queue.Task
	if diff.OnlyRemoved() {
		s.modules.Edit(func(modules map[string]*runstate.Module, enabled *[]string) {
			for _, name := range diff.Removed {
				delete(modules, name)
				*enabled = slices.DeleteFunc(*enabled, func(m string) bool { return m == name })
				purges = append(purges, s.mods.modulePurgeTask(name))
			}
		})
	}
	logDropped(s.logger, "the tree changed", dropped)
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
	enabled, failed, reasons, err := s.run.resolveEnabled(ctx, model, store, func(name string) bool { return slices.Contains(current, name) })
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
	s.steps.phase.begin(PhaseConverging, s.cfg.Now())
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
