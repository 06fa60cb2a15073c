package binding

import (
	"context"

	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
)

// follow keeps the schedules and monitors in step with the running state
// until ctx is done: it wakes at each change of the running tree or of the
// modules' states, and at the first convergence, and syncs both. The
// channels are taken before the sync, so a change during it wakes it again.
func (bs *Bindings) follow(ctx context.Context) {
	converged := bs.steps.Converged()
	for {
		_, trees := bs.trees.Changed()
		version, modules := bs.modules.Changed()
		bs.syncSchedules()
		// reading the state under the list's lock, so monitors a task added
		// for a newer tree or state are never dropped by a read of an older one
		stop := bs.kube.retain(func() map[string]bool { return wantedMonitors(bs.trees, bs.modules) })
		for _, hm := range stop {
			stopAll(hm)
			bs.logger.Info("stopped watching for hook", "hook", hm.hook.Name, "module", hm.hook.Module)
		}
		bs.synced.Store(version)
		select {
		case <-ctx.Done():
			return
		case <-trees:
		case <-modules:
		case <-converged:
			converged = nil // closed for good: wait on the others only
		}
	}
}

// wantedMonitors are the hooks (by loader.Hook.Key) whose monitors may
// run: global hooks' and those of modules whose monitors are wanted, in
// the running tree; those of hooks gone from it or changed are not.
func wantedMonitors(trees *runstate.Trees, modules *runstate.Modules) map[string]bool {
	model, _ := trees.Current()
	want := map[string]bool{}
	for _, h := range model.Global.Hooks {
		want[h.Key()] = true
	}
	// only hooks that bind kubernetes events have monitors
	moduleHooks(model, modules, func(c *loader.HookConfig) bool { return len(c.Kubernetes) > 0 }, monitorsWanted,
		func(h *loader.Hook) { want[h.Key()] = true })
	return want
}

// moduleHooks calls fn with each module hook whose config binds (binds)
// of the modules whose state wants it. The syncs that use it run at every
// change of a module's state, so a state is read only for a module that
// has such a hook, and once (a copy of every state was O(N²) garbage per
// converge; docs/performance.md).
func moduleHooks(model *loader.Model, modules *runstate.Modules, binds func(*loader.HookConfig) bool,
	wants func(runstate.Module) bool, fn func(*loader.Hook)) {
	for _, m := range model.Modules {
		wanted, looked := false, false
		for _, h := range m.Hooks {
			if h.Config == nil || !binds(h.Config) {
				continue
			}
			if !looked {
				wanted, looked = wants(modules.Get(m.Name)), true
			}
			if wanted {
				fn(h)
			}
		}
	}
}

// monitorsWanted: the monitors of a module's hooks run while it is
// enabled, and, once disabled, until its delete finished (its
// afterDeleteHelm hooks still see the snapshots; docs/operator.md,
// "Kubernetes bindings").
func monitorsWanted(st runstate.Module) bool {
	return st.Enabled || (st.State != "" && st.State != runstate.StateDisabled)
}
