package steptime

import (
	"context"
	"runtime/trace"
	"time"
)

// The steps of a module run, as the operator marks them.
const (
	CRDs        = "crds"         // the module's crds/ applied (when changed)
	HookFiles   = "hook_files"   // a hook run's temp files: values, config values and binding context as JSON
	HookExec    = "hook_exec"    // the hook's process, start to exit
	HookResults = "hook_results" // what it handed back read, checked and applied (values patch and validation, object patches, metrics)
	HookMetrics = "hook_metrics" // the hook run's own metrics and readiness
	Sync        = "sync"         // kubernetes Synchronization of hooks whose monitors do not run yet
	Values      = "values"       // the Helm values checked against the schemas and built
	HelmRender  = "helm_render"  // the chart loaded (cached) and rendered, its checksum
	HelmRelease = "helm_release" // the last release read (from the snapshot) and repaired if stuck
	HelmAbsent  = "helm_absent"  // the release's resources checked for presence (unchanged release)
	HelmLabel   = "helm_label"   // the release record relabelled (maintenance, claim)
	HelmApply   = "helm_apply"   // the install or upgrade: API writes and the release record
	HelmAfter   = "helm_after"   // Helm's metrics, conflict bookkeeping and log line
	RunMetrics  = "run_metrics"  // the run's duration metric
	Status      = "status"       // the module's state and the revision's status (commit status, Module objects are told)
	Health      = "health"       // the health tracker told of the release
	Record      = "record"       // the rest of the outcome's bookkeeping, and a re-run queued
)

// Observer receives each step's wall time.
type Observer interface {
	ObserveStep(step string, took time.Duration)
}

// Clock times the steps of one module run. It is not safe for concurrent
// use: one run's steps are sequential (modules that run at once have a
// Clock each).
type Clock struct {
	obs  Observer
	last time.Time
}

type key struct{}

// Start returns ctx with a Clock that reports to obs, started now. A nil
// obs returns ctx as it is.
func Start(ctx context.Context, obs Observer) context.Context {
	if obs == nil {
		return ctx
	}
	return context.WithValue(ctx, key{}, &Clock{obs: obs, last: time.Now()})
}

// Mark ends the step named step of the run ctx times: the time since the
// previous mark (or Start) is that step's. Without a Clock in ctx it does
// nothing.
func Mark(ctx context.Context, step string) {
	c, _ := ctx.Value(key{}).(*Clock)
	if c == nil {
		return
	}
	now := time.Now()
	c.obs.ObserveStep(step, now.Sub(c.last))
	c.last = now
	if trace.IsEnabled() {
		trace.Log(ctx, "step", step)
	}
}
