package statusapi

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/lifecycle/driftcheck"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
	"github.com/addonops/addon-operator/values"
)

// Tree is the running tree (runstate.Trees).
type Tree interface {
	// Load is the running tree; nil until the first is loaded.
	Load() *runstate.Tree
}

// Modules is the module registry (runstate.Modules).
type Modules interface {
	All() map[string]runstate.Module
	EnabledList() []string
}

// Queues are the task queues (runstate.Queues).
type Queues interface {
	// Get is the queues; nil until the operator runs.
	Get() *queue.Set
}

// Revisions are the steps' verdicts: whether the first reload converged,
// and why the last tree or purge was refused.
type Revisions interface {
	Ready() bool
	TreeStatus() (err, reason string)
	PurgeError() string
}

// HookFailures are the hooks' last failed runs, until they run without
// failing: the error and the end of the hook's stderr.
type HookFailures interface {
	HookFailure(hook string) (err, output string)
}

// Health is the health of modules' releases (health.Tracker).
type Health interface {
	Module(module string) (health.ModuleHealth, bool)
}

// Drift is the drift checks' reports and `module diff`
// (driftcheck.Checker); Diff refuses with driftcheck's sentinel errors.
type Drift interface {
	Of(module string) *driftcheck.Status
	Diff(ctx context.Context, module string) (string, error)
}

// Bindings are the kubernetes bindings' monitors and the API server
// watches they share.
type Bindings interface {
	WatchStatus() []WatchStatus
	Watches() []kube.WatchInfo
}

// Webhooks is the webhook part: its /status view and each hook's webhook
// bindings for /debug/hooks.
type Webhooks interface {
	// WebhookStatus is the running tree's webhook bindings as /status
	// shows them, nil when no tree binds one. It is served as it
	// marshals: the type lives with the webhook part.
	WebhookStatus() any
	DebugBindings(c *loader.HookConfig) []DebugBinding
}

var (
	_ Tree    = (*runstate.Trees)(nil)
	_ Modules = (*runstate.Modules)(nil)
	_ Queues  = (*runstate.Queues)(nil)
	_ Health  = (*health.Tracker)(nil)
	_ Drift   = (*driftcheck.Checker)(nil)
)

// Options are the parts an API reads. Tree, Modules, Queues and Revisions
// are required; the others may be nil (none).
type Options struct {
	Tree      Tree
	Modules   Modules
	Queues    Queues
	Revisions Revisions
	Failures  HookFailures
	Health    Health
	Drift     Drift
	Bindings  Bindings
	Webhooks  Webhooks
	// Registry is /metrics, HookRegistry /metrics/hooks (what hooks wrote
	// to METRICS_PATH); Metrics, if set, serves /metrics instead of
	// Registry (the operator's own writer, metrics.Recorder.Handler).
	Registry, HookRegistry prometheus.Gatherer
	Metrics                http.Handler
	// Extra, if set, adds fields to /status (the git source); the status's
	// own fields win over its.
	Extra func() map[string]any
	// Namespace is what /debug renders charts for: the releases' namespace.
	Namespace string
	// Redactor hides secret config values in /status, /queue and /debug
	// (nil: none).
	Redactor *values.Redactor
}
