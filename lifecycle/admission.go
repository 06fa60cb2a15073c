package lifecycle

import (
	"context"
	"fmt"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/values"
)

// Admit is the one way a tree and ConfigMap data are judged together
// (docs/architecture.md, "Admission"): it builds the values store of the
// model, checks the maintenance keys and sets the data, validated against
// the model's schemas. Start-up (Run), a new tree (CheckTree, then adopt),
// a ConfigMap edit (onConfigChange) and previews (RenderPreview) all call
// it; each adds what it is refusing to the error.
//
// active are the module keys the running tree's last discovery enabled
// (values.Sections.Active; none at start-up): their sections are validated,
// and so are those of modules the flags enable without an enabled script
// and those the data's own *Enabled flags enable; a module an enabled
// script enables has its section checked by discovery (resolveEnabled), so
// a disabled module's section refuses nothing (docs/operator.md, "Values").
func Admit(model *loader.Model, data map[string]string, active []string) (*values.Store, error) {
	store, _, err := values.NewStore(model.Values)
	if err != nil {
		return nil, fmt.Errorf("values of the tree: %w", err)
	}
	store.Sections().SetActive(active)
	if err := CheckSettings(model, data); err != nil {
		return nil, fmt.Errorf("the ConfigMap does not suit the tree: %w", err)
	}
	if _, err := store.SetConfig(data); err != nil {
		return nil, fmt.Errorf("the tree's schemas refuse the ConfigMap: %w", err)
	}
	return store, nil
}

// admittedConfig is the ConfigMap data a tree is admitted against: the
// copy the running store holds (read once by Run, then kept by the watch,
// newest version first). One copy serves the check before a revision is
// published (CheckTree) and its adoption (adopt), so they judge the same
// data: a fresh GET could pass a tree against an edit the operator has
// not seen yet, or has refused, and adopt would refuse it after all. Until
// Run has read it (a standby, or before start-up) there is no copy, and
// the ConfigMap is read as Run reads it.
func (o *Operator) admittedConfig(ctx context.Context) (map[string]string, error) {
	if t := o.trees.Load(); t != nil {
		return t.ConfigData, nil
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
