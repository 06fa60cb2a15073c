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
}

var _ HealthTracker = (*health.Tracker)(nil)

// healthDeployed: a module's run finished; res is its Helm step's result
// (zero for a module without a chart).
func (c *core) healthDeployed(ctx context.Context, name string, res kube.Result) {
	if c.cfg.Health != nil {
		c.cfg.Health.Deployed(ctx, name, res.Revision, res.Upgraded)
	}
}

// healthRemoved: the module's release is gone (or it has none any more).
func (c *core) healthRemoved(name string) {
	if c.cfg.Health != nil {
		c.cfg.Health.Removed(name)
	}
}

// moduleHealth is a module's health for /status; nil when it is not
// tracked. Not called under c.mu: the tracker has its own lock.
func (c *core) moduleHealth(name string) *health.ModuleHealth {
	if c.cfg.Health == nil {
		return nil
	}
	if h, ok := c.cfg.Health.Module(name); ok {
		return &h
	}
	return nil
}

// withHealth adds each module's health status to /debug/modules.
func (c *core) withHealth(mods []DebugModule) {
	for i := range mods {
		if h := c.moduleHealth(mods[i].Name); h != nil {
			mods[i].Health = h.Status
		}
	}
}
