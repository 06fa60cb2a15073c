package binding

import (
	"context"

	"github.com/addonops/addon-operator/lifecycle/runstate"
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
		bs.syncMonitors()
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

// monitorsWanted: the monitors of a module's hooks run while it is
// enabled, and, once disabled, until its delete finished (its
// afterDeleteHelm hooks still see the snapshots; docs/operator.md,
// "Kubernetes bindings").
func monitorsWanted(st runstate.Module) bool {
	return st.Enabled || (st.State != "" && st.State != runstate.StateDisabled)
}
