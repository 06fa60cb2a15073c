package runstate

import (
	"errors"
	"fmt"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/values"
)

// Admit is the one way a tree and ConfigMap data are judged together
// (docs/architecture.md, "Admission"): it builds the values store of the
// model, checks the maintenance keys and sets the data, validated against
// the model's schemas. Start-up (Run), a new tree (CheckTree, then adopt),
// a ConfigMap edit (onConfigChange) and previews (preview.Render) all call
// it; each adds what it is refusing to the error.
//
// active are the module keys the running tree's last discovery enabled
// (values.Sections.Active; none at start-up): their sections are validated,
// and so are those of modules the flags enable without an enabled script
// and those the data's own *Enabled flags enable; a module an enabled
// script enables has its section checked by discovery (hookrun's ResolveEnabled), so
// a disabled module's section refuses nothing (docs/operator.md, "Values").
func Admit(model *loader.Model, data map[string]string, active []string) (*values.Store, error) {
	store, _, err := values.NewStore(model.Values)
	if err != nil {
		return nil, fmt.Errorf("values of the tree: %w", err)
	}
	store.Sections().SetActive(active)
	if err := checkSettings(model, data); err != nil {
		return nil, fmt.Errorf("the ConfigMap does not suit the tree: %w", err)
	}
	if _, err := store.SetConfig(data); err != nil {
		return nil, fmt.Errorf("the tree's schemas refuse the ConfigMap: %w", err)
	}
	return store, nil
}

// ErrTreeMoved: the running tree changed after an edit was checked against
// it (Trees.SetConfig); the edit is checked again.
var ErrTreeMoved = errors.New("the running tree changed while the settings were checked")

// Maintenance mode: the ConfigMap key <module>Maintenance, as in the
// original addon-operator (docs/operator.md, "Maintenance mode").
const (
	maintenanceSuffix = "Maintenance"
	// NoResourceReconciliation leaves the module's release as it is.
	NoResourceReconciliation = "NoResourceReconciliation"
	// Managed is the usual mode, the same as no key.
	Managed = "Managed"
)

// Maintenance reads a module's mode from ConfigMap data.
func Maintenance(data map[string]string, m *loader.Module) (bool, error) {
	key := m.Key + maintenanceSuffix
	switch v := data[key]; v {
	case "", Managed:
		return false, nil
	case NoResourceReconciliation:
		return true, nil
	default:
		return false, fmt.Errorf("ConfigMap key %s: want %s or %s, got %q", key, NoResourceReconciliation, Managed, v)
	}
}

// MaintenanceChanged lists the modules whose mode differs between two
// versions of the ConfigMap data.
func MaintenanceChanged(model *loader.Model, before, after map[string]string) []string {
	var out []string
	for _, m := range model.Modules {
		key := m.Key + maintenanceSuffix
		if before[key] != after[key] {
			out = append(out, m.Name)
		}
	}
	return out
}

// checkSettings checks every module's mode in ConfigMap data.
func checkSettings(model *loader.Model, data map[string]string) error {
	for _, m := range model.Modules {
		if _, err := Maintenance(data, m); err != nil {
			return err
		}
		if _, err := DriftMode(data, m, DriftCorrect); err != nil {
			return err
		}
	}
	return nil
}

// Drift modes: the setting ADDON_OPERATOR_DRIFT and a module's
// <module>Drift ConfigMap key.
const (
	DriftWarn    = "warn"
	DriftCorrect = "correct"
	driftSuffix  = "Drift"
)

// DriftMode is a module's mode: its ConfigMap key, else the default.
func DriftMode(data map[string]string, m *loader.Module, def string) (string, error) {
	key := m.Key + driftSuffix
	switch v := data[key]; v {
	case "":
		return def, nil
	case DriftWarn, DriftCorrect:
		return v, nil
	default:
		return "", fmt.Errorf("ConfigMap key %s: want %s or %s, got %q", key, DriftWarn, DriftCorrect, v)
	}
}
