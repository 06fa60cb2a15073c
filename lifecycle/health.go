package lifecycle

import (
	"context"

	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/kube"
)

// HealthTracker follows the health of modules' releases (docs/operator.md,
// "Health"): a module run that deployed its release tells it, a module
// deleted or purged is forgotten, and /status and `module list` read it.
type HealthTracker interface {
	Deployed(ctx context.Context, module string, revision int, upgraded bool)
	Removed(module string)
	Module(module string) (health.ModuleHealth, bool)
	// Watch is what a health wait holds on, after Refresh reads the
	// module's own writes (healthwait.go).
	Watch(module string) (health.Watched, bool)
	Refresh(ctx context.Context, module string) error
}

var _ HealthTracker = (*health.Tracker)(nil)

// healthDeployed: a module's run finished; res is its Helm step's result
// (zero for a module without a chart).
func healthDeployed(ctx context.Context, t HealthTracker, name string, res kube.Result) {
	if t != nil {
		t.Deployed(ctx, name, res.Revision, res.Upgraded)
	}
}

// healthRemoved: the module's release is gone (or it has none any more).
func healthRemoved(t HealthTracker, name string) {
	if t != nil {
		t.Removed(name)
	}
}
