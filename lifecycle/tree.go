package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
	"github.com/addonops/addon-operator/values"
)

const kindReloadTree = "ReloadTree"

// resolve follows symlinks (a git checkout's "current" link) so a model's
// paths stay valid after the link moves on; a missing path is kept as is.
func resolve(p string) string {
	if p == "" {
		return ""
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// load reads the tree at the configured directories.
func (o *Operator) load(ctx context.Context) (*loader.Model, error) {
	return o.loader.Load(ctx, resolve(o.cfg.Root), resolve(o.cfg.ModulesDir), resolve(o.cfg.GlobalHooksDir))
}

// TreeChanged tells the operator that the tree on disk changed (a new git
// revision was published, or a working copy was saved). commit is the
// revision's commit ("" in no-git mode). The reload runs in the main queue.
func (o *Operator) TreeChanged(commit string) {
	o.mu.Lock()
	queues := o.queues
	if queues == nil {
		// before Run made its queues: the change may have come after the
		// start-up load, so Run reloads once it can
		o.pendingTree, o.pendingCommit = true, commit
	}
	o.mu.Unlock()
	if queues == nil {
		return
	}
	queues.Main().Add(&queue.Task{
		Kind:        kindReloadTree,
		Description: "load the changed tree " + commit,
		MergeKey:    kindReloadTree,
		Merge:       func(*queue.Task) {},
		Do:          func(ctx context.Context) error { return o.reloadTree(ctx, commit) },
	})
}

// CheckTree loads the tree under root (modulesDir and globalHooksDir are
// relative to it) and checks the current configuration against its
// schemas, without adopting it: the git syncer's check before it publishes
// a revision.
func (o *Operator) CheckTree(ctx context.Context, root, modulesDir, globalHooksDir string) error {
	model, err := o.loader.Load(ctx, root, filepath.Join(root, modulesDir), filepath.Join(root, globalHooksDir))
	if err != nil {
		return err
	}
	store, _, err := values.NewStore(model.Values)
	if err != nil {
		return err
	}
	o.mu.Lock()
	data := maps.Clone(o.configData)
	o.mu.Unlock()
	if err := store.CheckConfig(data); err != nil {
		return fmt.Errorf("its schemas refuse the current ConfigMap: %w", err)
	}
	return nil
}

// TreeError is the last refused tree's error ("" when the last load worked).
func (o *Operator) TreeError() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.treeError
}

// reloadTree loads the tree, and adopts it when it loads and its schemas
// accept the current configuration; otherwise the previous model stays in
// force and the error is kept for /status. Removed modules alone are purged;
// any other change reloads all modules (hook configs are re-read; unchanged
// hooks come from the loader's cache).
func (o *Operator) reloadTree(ctx context.Context, commit string) error {
	model, err := o.load(ctx)
	if err == nil {
		err = o.adopt(model, commit)
	}
	o.mu.Lock()
	o.treeError = ""
	if err != nil {
		o.treeError = err.Error()
	}
	o.mu.Unlock()
	if err != nil {
		o.metrics.treeErrors.Inc()
		o.logger.Error("changed tree refused; keeping the previous one", "revision", commit, "err", err)
	}
	return nil // a bad tree waits for the next change, not for a retry
}

func (o *Operator) adopt(model *loader.Model, commit string) error {
	old, oldStore := o.current()
	diff := loader.Compare(old, model)
	o.mu.Lock()
	sameCommit := commit == o.commit
	data := maps.Clone(o.configData)
	o.mu.Unlock()
	if diff.Empty() && sameCommit {
		return nil
	}
	store, _, err := values.NewStore(model.Values)
	if err != nil {
		return err
	}
	if _, err := store.SetConfig(data); err != nil {
		return fmt.Errorf("the new tree's schemas refuse the current ConfigMap: %w", err)
	}
	if dropped := store.RestorePatches(oldStore.Patches()); len(dropped) > 0 {
		o.logger.Info("temporary values dropped with the old tree", "sections", dropped)
	}
	o.mu.Lock()
	o.model, o.store, o.commit = model, store, commit
	o.mu.Unlock()
	// the old tree's schedules and monitors stop; new ones start as modules run
	o.syncSchedules()
	o.syncMonitors()
	o.logger.Info("tree changed", "revision", commit, "added", diff.Added, "removed", diff.Removed, "changed", diff.Changed, "global", diff.Global)
	if diff.OnlyRemoved() {
		var tasks []*queue.Task
		o.mu.Lock()
		for _, name := range diff.Removed {
			delete(o.modules, name)
			o.enabledModules = slices.DeleteFunc(o.enabledModules, func(m string) bool { return m == name })
			tasks = append(tasks, o.modulePurgeTask(name))
		}
		o.mu.Unlock()
		o.queues.Main().AddAfterCurrent(tasks...)
		return nil
	}
	o.queues.Main().AddAfterCurrent(o.reloadAllTask())
	return nil
}
