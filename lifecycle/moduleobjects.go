package lifecycle

import (
	"context"

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
		Logger: cfg.Logger, Now: cfg.Now, After: cfg.After}
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

// ModuleEventRecorder records Kubernetes Events about one module: on its
// Module object while this process writes it, on the values ConfigMap
// otherwise (modulestatus.Events; docs/operator.md, "Events").
type ModuleEventRecorder interface {
	ModuleWarning(ctx context.Context, module, reason, message string) error
}

var _ ModuleEventRecorder = (*modulestatus.Events)(nil)

// onConfigMap records modules' Events with the other Events, when cfg
// names no ModuleEvents.
type onConfigMap struct{ rec EventRecorder }

func (c onConfigMap) ModuleWarning(ctx context.Context, _, reason, message string) error {
	return c.rec.Warning(ctx, reason, message)
}

// moduleEventOnObject says whether a module's Event goes to its Module
// object now (modulestatus.Events.OnObject); true when there is no such
// routing: every Event then goes to one place.
func (cfg Config) moduleEventOnObject(module string) bool {
	if r, ok := cfg.ModuleEvents.(interface{ OnObject(string) bool }); ok {
		return r.OnObject(module)
	}
	return true
}

// moduleWarning records a Warning Event about module, logging a failure
// (an Event is best effort: the problem is on /status and in the log); it
// returns that failure, for a caller that records an Event once per
// problem to try again.
func (cfg Config) moduleWarning(ctx context.Context, module, reason, message string) error {
	if cfg.ModuleEvents == nil {
		return nil
	}
	err := cfg.ModuleEvents.ModuleWarning(ctx, module, reason, message)
	if err != nil {
		cfg.Logger.Warn("could not record an Event", "module", module, "reason", reason, "err", err)
	}
	return err
}
