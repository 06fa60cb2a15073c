package statusapi

import (
	"slices"

	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/lifecycle/driftcheck"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/queue"
)

// ModuleStatus is one module in /status.
type ModuleStatus struct {
	Name      string               `json:"name"`
	Enabled   bool                 `json:"enabled"`
	State     runstate.ModuleState `json:"state"`
	LastError string               `json:"lastError,omitempty"`
	// Reason names a failure that is not retried (queue.TerminalError):
	// ReleaseConflict, ValuesRefused; the next change runs the module.
	Reason string `json:"reason,omitempty"`
	// Health is the health of its release's objects, once it deployed
	// (docs/operator.md, "Health").
	Health *health.ModuleHealth `json:"health,omitempty"`
	// Drift is the last drift check's drifted objects (docs/operator.md,
	// "Drift"); absent when there are none.
	Drift *driftcheck.Status `json:"drift,omitempty"`
	// DisabledReason is why its enabled script disabled it
	// (MODULE_ENABLED_REASON), while it is disabled.
	DisabledReason string `json:"disabledReason,omitempty"`
	// Readiness is its readiness hook's last result, while it is enabled.
	Readiness *runstate.Readiness `json:"readiness,omitempty"`
}

// WatchStatus is one kubernetes binding's monitor in /status.
type WatchStatus struct {
	Hook    string `json:"hook"`
	Module  string `json:"module,omitempty"`
	Binding string `json:"binding"`
	Kind    string `json:"kind"`
	// Objects is how many objects the binding sees now.
	Objects int `json:"objects"`
	// LastError is the last list or watch error (retried with backoff).
	LastError string `json:"lastError,omitempty"`
}

// Status is what /status serves (besides Options.Extra's fields). It is
// the one place a field is added: /status marshals it.
type Status struct {
	Ready bool `json:"ready"`
	// Revision is the commit the modules were loaded from ("" without git).
	Revision string `json:"revision"`
	// TreeError says why the last changed tree was refused.
	TreeError string `json:"treeError"`
	// TreeReason is why in a word: TreeRefused (it did not load or its
	// schemas refuse the ConfigMap) or PurgeRefused (the purge guard).
	TreeReason string `json:"treeReason,omitempty"`
	// PurgeError says why the last discovery left releases in place that
	// it would have uninstalled (the purge guard), and what confirms them.
	PurgeError string `json:"purgeError,omitempty"`
	// ConfigFiles are the files of the running revision's config in git,
	// in layer order (docs/operator.md, "Config in git"); absent when off.
	ConfigFiles []string `json:"configFiles,omitempty"`
	// ConfigDrift are the values ConfigMap's values that the config in git
	// replaces, not applied: the key, the path below it and the file in
	// git (docs/operator.md, "Config in git"); absent when none.
	ConfigDrift []clusterconfig.Override `json:"configDrift,omitempty"`
	// ClusterKeys are, with a config in git, the keys git does not set
	// that the cluster does (the values ConfigMap, a values Secret): they
	// apply as they are and stay when a rollback by ref restores git's.
	ClusterKeys []string          `json:"clusterKeys,omitempty"`
	Modules     []ModuleStatus    `json:"modules"`
	Queues      []queue.QueueInfo `json:"queues"`
	// Watches are the API server watches, each with the bindings that
	// share it.
	Watches []kube.WatchInfo `json:"watches"`
	// Bindings are the kubernetes bindings of running hooks.
	Bindings []WatchStatus `json:"bindings"`
	// Webhooks are the running tree's webhook bindings (Webhooks).
	Webhooks any `json:"webhooks,omitempty"`
}

// API serves the status and debug endpoints from its Options' parts.
type API struct{ opts Options }

// New prepares an API.
func New(opts Options) *API { return &API{opts: opts} }

// Status reports modules in tree order and the queues.
func (a *API) Status() Status {
	o := a.opts
	st := Status{Ready: o.Revisions.Ready(), Modules: []ModuleStatus{}, Bindings: []WatchStatus{}, Watches: []kube.WatchInfo{}}
	st.TreeError, st.TreeReason = o.Revisions.TreeStatus()
	st.PurgeError = o.Revisions.PurgeError()
	if t := o.Tree.Load(); t != nil {
		st.Revision, st.ConfigDrift = t.Rev.Commit, t.Overrides
		if c := t.Model.Config; c != nil {
			st.ConfigFiles = c.Files
			for k := range t.ClusterData {
				if _, set := c.Data[k]; !set {
					st.ClusterKeys = append(st.ClusterKeys, k)
				}
			}
			slices.Sort(st.ClusterKeys)
		}
		states := o.Modules.All()
		for _, m := range t.Model.Modules {
			ms := ModuleStatus{Name: m.Name, State: runstate.StateDisabled}
			if s, ok := states[m.Name]; ok {
				ms.Enabled, ms.State, ms.LastError, ms.Reason = s.Enabled, s.State, s.LastError, s.Reason
				ms.DisabledReason, ms.Readiness = s.ShownReasons()
			}
			if o.Drift != nil {
				ms.Drift = o.Drift.Of(m.Name)
			}
			ms.Health = a.moduleHealth(m.Name)
			st.Modules = append(st.Modules, ms)
		}
	}
	if queues := o.Queues.Get(); queues != nil {
		st.Queues = queues.Dump()
	}
	if o.Bindings != nil {
		st.Bindings, st.Watches = o.Bindings.WatchStatus(), o.Bindings.Watches()
	}
	if o.Webhooks != nil {
		st.Webhooks = o.Webhooks.WebhookStatus()
	}
	return st
}

// moduleHealth is a module's health for /status; nil when it is not
// tracked.
func (a *API) moduleHealth(name string) *health.ModuleHealth {
	if a.opts.Health == nil {
		return nil
	}
	if h, ok := a.opts.Health.Module(name); ok {
		return &h
	}
	return nil
}
