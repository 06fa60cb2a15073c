package lifecycle

import (
	"encoding/json"
	"net/http"

	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/lifecycle/binding"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/queue"
)

// ModuleStatus is one module in /status.
type ModuleStatus struct {
	Name      string      `json:"name"`
	Enabled   bool        `json:"enabled"`
	State     ModuleState `json:"state"`
	LastError string      `json:"lastError,omitempty"`
	// Reason names a failure that is not retried (queue.TerminalError):
	// ReleaseConflict, ValuesRefused; the next change runs the module.
	Reason string `json:"reason,omitempty"`
	// Health is the health of its release's objects, once it deployed
	// (docs/operator.md, "Health").
	Health *health.ModuleHealth `json:"health,omitempty"`
	// Drift is the last drift check's drifted objects (docs/operator.md,
	// "Drift"); absent when there are none.
	Drift *DriftStatus `json:"drift,omitempty"`
	// DisabledReason is why its enabled script disabled it
	// (MODULE_ENABLED_REASON), while it is disabled.
	DisabledReason string `json:"disabledReason,omitempty"`
	// Readiness is its readiness hook's last result, while it is enabled.
	Readiness *Readiness `json:"readiness,omitempty"`
}

// WatchStatus is one kubernetes binding's monitor in /status (binding.WatchStatus).
type WatchStatus = binding.WatchStatus

// Status is what /status serves (besides the source, which the caller adds).
type Status struct {
	Ready bool `json:"ready"`
	// Revision is the commit the modules were loaded from ("" without git).
	Revision string `json:"revision,omitempty"`
	// TreeError says why the last changed tree was refused.
	TreeError string `json:"treeError,omitempty"`
	// TreeReason is why in a word: TreeRefused (it did not load or its
	// schemas refuse the ConfigMap) or PurgeRefused (the purge guard).
	TreeReason string `json:"treeReason,omitempty"`
	// PurgeError says why the last discovery left releases in place that
	// it would have uninstalled (the purge guard), and what confirms them.
	PurgeError string            `json:"purgeError,omitempty"`
	Modules    []ModuleStatus    `json:"modules"`
	Queues     []queue.QueueInfo `json:"queues"`
	// Watches are the API server watches, each with the bindings that
	// share it.
	Watches []kube.WatchInfo `json:"watches"`
	// Bindings are the kubernetes bindings of running hooks.
	Bindings []WatchStatus `json:"bindings"`
	// Webhooks are the running tree's webhook bindings (lifecycle/webhookrun).
	Webhooks *WebhookStatus `json:"webhooks,omitempty"`
}

// Status reports modules in tree order and the queues.
func (o *Operator) Status() Status {
	st := Status{Ready: o.steps.converged(), Modules: []ModuleStatus{}}
	st.TreeError, st.TreeReason = o.tree.revs.treeStatus()
	st.PurgeError, _ = o.purge.status()
	if t := o.trees.Load(); t != nil {
		st.Revision = t.Rev.Commit
		states := o.modules.All()
		for _, m := range t.Model.Modules {
			ms := ModuleStatus{Name: m.Name, State: StateDisabled}
			if s, ok := states[m.Name]; ok {
				ms.Enabled, ms.State, ms.LastError, ms.Reason = s.Enabled, s.State, s.LastError, s.Reason
				ms.DisabledReason, ms.Readiness = s.ShownReasons()
			}
			ms.Drift = o.drift.of(m.Name)
			ms.Health = moduleHealth(o.cfg.Health, m.Name)
			st.Modules = append(st.Modules, ms)
		}
	}
	if queues := o.Queues(); queues != nil {
		st.Queues = queues.Dump()
	}
	st.Bindings = o.bind.WatchStatus()
	st.Webhooks = o.hooks.Status()
	st.Watches = []kube.WatchInfo{}
	if o.cfg.Monitors != nil {
		st.Watches = o.cfg.Monitors.Watches()
	}
	return st
}

// HTTPOptions configure Handler.
type HTTPOptions struct {
	// Extra, if set, adds fields to /status (the git source).
	Extra func() map[string]any
	// Namespace is what /debug renders charts for: the releases' namespace.
	Namespace string
}

// Handler serves /metrics, /metrics/hooks, /healthz, /readyz, /queue, /status and the
// debug endpoints under /debug/ (debug.go).
func (o *Operator) Handler(opts HTTPOptions) http.Handler {
	extra := opts.Extra
	mux := http.NewServeMux()
	(&debugAPI{trees: o.trees, modules: o.modules, failures: o.run.Failures(), health: o.cfg.Health}).debugRoutes(mux, opts.Namespace)
	// a diff may show what a hand edit put in a ConfigMap: local only, as
	// /debug/ (docs/security.md, "Who sees what")
	mux.Handle("GET /debug/modules/{name}/diff", LocalOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		diff, err := o.drift.moduleDiff(r.Context(), r.PathValue("name"))
		if err != nil {
			writeDebugError(w, err)
			return
		}
		w.Header().Set("Content-Type", "text/x-diff; charset=utf-8")
		_, _ = w.Write([]byte(diff))
	})))
	mux.Handle("/metrics", promhttp.HandlerFor(o.cfg.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	// what hooks wrote to METRICS_PATH, apart from the operator's own
	mux.Handle("/metrics/hooks", promhttp.HandlerFor(o.metrics.HookRegistry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !o.Ready() {
			http.Error(w, "not converged yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/queue", func(w http.ResponseWriter, r *http.Request) {
		queues := o.Queues()
		if queues == nil {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		queues.Handler().ServeHTTP(w, r)
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		body := map[string]any{}
		if extra != nil {
			body = extra()
		}
		st := o.Status()
		body["ready"], body["modules"], body["queues"] = st.Ready, st.Modules, st.Queues
		body["revision"], body["treeError"], body["watches"], body["bindings"] = st.Revision, st.TreeError, st.Watches, st.Bindings
		if st.PurgeError != "" {
			body["purgeError"] = st.PurgeError
		}
		if st.TreeReason != "" {
			body["treeReason"] = st.TreeReason
		}
		if st.Webhooks != nil {
			body["webhooks"] = st.Webhooks
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(body)
	})
	return mux
}
