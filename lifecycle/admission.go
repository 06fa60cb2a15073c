package lifecycle

import (
	"context"
)

// admittedConfig is the ConfigMap data a tree is admitted against, the
// cluster's side that the tree's config in git is laid over
// (runstate.Effective): the copy the running tree holds (read once by Run, then kept by the watch,
// newest version first). One copy serves the check before a revision is
// published (CheckTree) and its adoption (adopt), so they judge the same
// data: a fresh GET could pass a tree against an edit the operator has
// not seen yet, or has refused, and adopt would refuse it after all. Until
// Run has read it (a standby, or before start-up) there is no copy, and
// the ConfigMap is read as Run reads it.
func (o *Operator) admittedConfig(ctx context.Context) (map[string]string, error) {
	if t := o.trees.Load(); t != nil {
		return t.ClusterData, nil
	}
	return o.backend.Get(ctx)
}

// activeModules are the module keys the running tree's discovery enabled,
// which admit validates the sections of; none before Run.
func (o *Operator) activeModules() []string {
	if t := o.trees.Load(); t != nil {
		return t.Store.Sections().Active()
	}
	return nil
}
