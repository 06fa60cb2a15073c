package lifecycle

import (
	"fmt"

	"github.com/addonops/addon-operator/loader"
)

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

// CheckSettings checks every module's mode in ConfigMap data.
func CheckSettings(model *loader.Model, data map[string]string) error {
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
