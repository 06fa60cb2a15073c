package lifecycle

import (
	"net/http"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/lifecycle/hookrun"
	"github.com/addonops/addon-operator/lifecycle/statusapi"
	"github.com/addonops/addon-operator/lifecycle/webhookrun"
	"github.com/addonops/addon-operator/loader"
)

// The status and debug HTTP API lives in lifecycle/statusapi; these are
// the names cmd and the parts know its types by.
type (
	// Status is what /status serves (statusapi.Status).
	Status = statusapi.Status
	// ModuleStatus is one module in /status.
	ModuleStatus = statusapi.ModuleStatus
	// WatchStatus is one kubernetes binding's monitor in /status.
	WatchStatus = statusapi.WatchStatus
	// DebugModule is one module in /debug/modules.
	DebugModule = statusapi.DebugModule
	// DebugHook is one hook in /debug/hooks.
	DebugHook = statusapi.DebugHook
	// DebugBinding is one binding of a hook in /debug/hooks.
	DebugBinding = statusapi.DebugBinding
)

// HTTPOptions configure Handler.
type HTTPOptions struct {
	// Extra, if set, adds fields to /status (the git source).
	Extra func() map[string]any
	// Namespace is what /debug renders charts for: the releases' namespace.
	Namespace string
}

// LocalOnly answers clients on the operator's own host and refuses others
// (statusapi.LocalOnly: the debug endpoints, and pprof when it is on).
func LocalOnly(next http.Handler) http.Handler { return statusapi.LocalOnly(next) }

// Status reports modules in tree order and the queues.
func (o *Operator) Status() Status { return o.statusAPI(HTTPOptions{}).Status() }

// Handler serves /metrics, /metrics/hooks, /healthz, /readyz, /queue, /status and the
// debug endpoints under /debug/ (statusapi).
func (o *Operator) Handler(opts HTTPOptions) http.Handler { return o.statusAPI(opts).Handler() }

// ModuleWeights are the running tree's modules' weights by name (nil
// before the first tree): the web view lists the modules by them. A
// function, not a method: Operator has its 15 (hack/methodcount).
func ModuleWeights(o *Operator) map[string]int {
	t := o.trees.Load()
	if t == nil || t.Model == nil {
		return nil
	}
	w := make(map[string]int, len(t.Model.Modules))
	for _, m := range t.Model.Modules {
		w[m.Name] = m.Order
	}
	return w
}

// statusAPI wires the status API to the operator's parts.
func (o *Operator) statusAPI(opts HTTPOptions) *statusapi.API {
	return statusapi.New(statusapi.Options{
		Tree: o.trees, Modules: o.modules, Queues: o.queues, Revisions: revisionsView{o},
		Failures: failuresView{o.run.Failures()}, Health: o.cfg.Health, Drift: o.drift,
		Bindings: bindingsView{o}, Webhooks: webhooksView{o.hooks},
		Metrics: o.metrics.Compact.Handler(o.cfg.Registry), HookRegistry: o.metrics.HookRegistry,
		Extra: opts.Extra, Namespace: opts.Namespace, Redactor: o.cfg.Redactor,
	})
}

// The adapters from the operator's parts to statusapi's providers.
type (
	revisionsView struct{ o *Operator }
	failuresView  struct{ f *hookrun.Failures }
	bindingsView  struct{ o *Operator }
	webhooksView  struct{ w *webhookrun.Webhooks }
)

var (
	_ statusapi.Revisions    = revisionsView{}
	_ statusapi.HookFailures = failuresView{}
	_ statusapi.Bindings     = bindingsView{}
	_ statusapi.Webhooks     = webhooksView{}
)

func (v revisionsView) Ready() bool                      { return v.o.steps.converged() }
func (v revisionsView) TreeStatus() (err, reason string) { return v.o.tree.revs.treeStatus() }
func (v revisionsView) PurgeError() string {
	err, _ := v.o.purge.status()
	return err
}

func (v failuresView) HookFailure(hook string) (err, output string) {
	f := v.f.Get(hook)
	return f.Err, f.Output
}

// WatchStatus converts binding's rows to statusapi's (the same fields:
// statusapi does not import binding).
func (v bindingsView) WatchStatus() []WatchStatus {
	rows := v.o.bind.WatchStatus()
	out := make([]WatchStatus, len(rows))
	for i, r := range rows {
		out[i] = WatchStatus(r)
	}
	return out
}
func (v bindingsView) Watches() []kube.WatchInfo {
	if v.o.cfg.Monitors == nil {
		return []kube.WatchInfo{}
	}
	return v.o.cfg.Monitors.Watches()
}

// WebhookStatus is nil, not a nil *WebhookStatus, when no tree binds a
// webhook: /status leaves the field out.
func (v webhooksView) WebhookStatus() any {
	if st := v.w.Status(); st != nil {
		return st
	}
	return nil
}

func (v webhooksView) DebugBindings(c *loader.HookConfig) []DebugBinding {
	return webhookDebugBindings(c)
}
