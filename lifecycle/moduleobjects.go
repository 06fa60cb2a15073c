package lifecycle

import (
	"github.com/addonops/addon-operator/lifecycle/driftcheck"
	"github.com/addonops/addon-operator/lifecycle/modulestatus"
	"github.com/addonops/addon-operator/lifecycle/runstate"
)

// newModuleObjects is the Module objects' writer, beside "main"
// (lifecycle/modulestatus); nil when cfg has no client for them.
func newModuleObjects(cfg Config, trees *runstate.Trees, modules *runstate.Modules, drift *driftcheck.Checker) *modulestatus.Writer {
	if cfg.ModuleObjects == nil {
		return nil
	}
	opts := modulestatus.Options{Trees: trees, Modules: modules, Drift: driftCount{drift}, Client: cfg.ModuleObjects,
		Logger: cfg.Logger, Now: cfg.Now}
	if cfg.Health != nil {
		opts.Health = cfg.Health
	}
	return modulestatus.New(opts)
}

// driftCount is the drift checks' count of drifted objects per module.
type driftCount struct{ c *driftcheck.Checker }

var _ modulestatus.Drift = driftCount{}

func (d driftCount) Drifted(module string) int {
	if st := d.c.Of(module); st != nil {
		return len(st.Objects)
	}
	return 0
}
