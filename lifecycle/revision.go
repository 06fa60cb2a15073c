package lifecycle

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"

	"github.com/addonops/addon-operator/lifecycle/binding"
	"github.com/addonops/addon-operator/lifecycle/hookrun"
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/lifecycle/taskkind"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// treeSteps are the steps of a new revision (docs/lifecycle.md, "A new
// revision"): load and admit its tree, adopt it past the purge guard
// (adopt.go), and run what changed: the removed modules' purges, the
// changed modules alone (changed.go), or 'reload all modules'. The
// revisions on the way are revisions' (revisions.go).
type treeSteps struct {
	cfg     Config
	logger  *slog.Logger
	metrics *metrics.Recorder
	trees   *runstate.Trees
	modules *runstate.Modules
	queues  *runstate.Queues
	run     *hookrun.Runner
	bind    *binding.Bindings
	loader  *loader.Loader
	steps   *steps
	mods    *moduleSteps
	purge   *purgeGuard
	rec     *recorder // the outcomes (record.go)
	revs    revisions // the revisions on the way
}

// Revision is a revision as the operator takes it: the git revision and
// the model CheckTree made of it, which is the one that runs (the commit
// recorded on releases and in /status is the one it came from). No model
// (a working copy) means the configured directories are loaded when the
// revision is adopted.
type Revision = gitsync.Checked[*loader.Model]

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
func (o *Operator) TreeChanged(rev Revision) {
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
	o.trees.Decrypted(model)
	data, err := o.admittedConfig(ctx)
	if err != nil {
		return nil, err
	}
	eff, _, err := runstate.Effective(model, data)
	if err != nil {
		return nil, refusal(root, model.ModulesDirs, refusedLoad, err)
	}
	if _, err := runstate.Admit(model, eff, o.activeModules()); err != nil {
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
