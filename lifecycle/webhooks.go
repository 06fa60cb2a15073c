package lifecycle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/addonops/addon-operator/lifecycle/hookrun"
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/webhook"
)

// WebhookRegistrar writes the configuration objects of the running tree's
// webhooks (docs/operator.md, "Validating and conversion webhooks").
type WebhookRegistrar interface {
	Apply(ctx context.Context, b webhook.Bindings) error
	// Serves says whether the server of that kind is configured (its
	// certificate given).
	Serves(kind webhook.Kind) bool
	// Registered is what is registered now (webhook.RegisteredKey values):
	// after a restart, what the last run left.
	Registered(ctx context.Context) (map[string]bool, error)
}

// webhookListener is a registrar that also runs the webhook servers
// (cmd's): Listen starts the servers of the kinds the tree binds and
// returns once they answer, whatever is registered, so that a request the
// last run's registration sends after a restart finds a server.
type webhookListener interface {
	Listen(ctx context.Context, kinds []webhook.Kind) error
}

var (
	_ WebhookRegistrar = (*webhook.Registrar)(nil)
	_ webhook.Reviewer = (*webhooks)(nil)
)

const (
	// webhookSyncEvery is how often the running tree's webhook bindings
	// are compared with what was registered.
	webhookSyncEvery = time.Second
	// webhookRewriteEvery re-applies unchanged bindings, so a configuration
	// or CRD conversion changed behind the operator's back (a chart that
	// re-applies its CRD) is put back.
	webhookRewriteEvery = time.Minute
)

// WebhookStatus is the /status view of the webhooks.
type WebhookStatus struct {
	Bindings []WebhookBindingStatus `json:"bindings"`
	// Error is the last registration's error ("" once it succeeded).
	Error string `json:"error,omitempty"`
}

// WebhookBindingStatus is one webhook binding of the running tree.
type WebhookBindingStatus struct {
	Kind   webhook.Kind `json:"kind"`
	Name   string       `json:"name"`
	Hook   string       `json:"hook"`
	Module string       `json:"module,omitempty"`
	// CRD is a conversion binding's CRD.
	CRD   string `json:"crd,omitempty"`
	Error string `json:"error,omitempty"`
}

// webhooks registers the webhook bindings of the running tree (global
// hooks, and hooks of enabled modules) and answers the API server's
// requests by running the bound hook at once, outside the queues: a
// webhook must answer within its timeout even while "main" retries.
type webhooks struct {
	cfg     Config
	logger  *slog.Logger
	metrics *metrics.Recorder
	trees   *runstate.Trees
	modules *runstate.Modules
	run     *hookrun.Runner
	bind    *bindings
	reg     WebhookRegistrar // nil: no webhook server configured
	// discovered: a discovery resolved which modules are enabled. Until
	// then a module's webhooks stay registered as the last run left them,
	// but for those the tree no longer binds (a restart must neither strip
	// an enabled module's webhooks nor add a disabled one's), and a
	// request for one is answered by its failurePolicy, not by the hook of
	// a module that may be disabled.
	discovered func() bool

	// inherited is what was registered before the first discovery (read
	// once by sync, its only user)
	inherited map[string]bool

	mu        sync.Mutex
	table     webhookTable
	status    WebhookStatus
	applied   string // digest of the bindings last registered
	appliedAt time.Time
}

// webhookTable is what requests are routed to.
type webhookTable struct {
	admission  map[string]admissionRoute // by webhook.RegisteredKey
	conversion []webhook.ConversionEntry
	hooks      map[string]*loader.Hook // by hook name
}

type admissionRoute struct {
	hook    *loader.Hook
	binding loader.AdmissionBinding
}

func admissionKind(b loader.AdmissionBinding) webhook.Kind {
	if b.Mutating {
		return webhook.Mutating
	}
	return webhook.Validating
}

// candidate is a hook of the tree and why its module does not run it
// ("" for a global hook and a hook of an enabled module).
type candidate struct {
	hook    *loader.Hook
	waiting string
}

// candidates are the tree's hooks that bind webhooks: global hooks, then
// each module's, with why the module does not answer (yet).
func candidates(model *loader.Model, known bool, enabled []string) []candidate {
	var out []candidate
	for _, h := range model.Global.Hooks {
		out = append(out, candidate{hook: h})
	}
	for _, m := range model.Modules {
		why := moduleWaiting(m.Name, known, slices.Contains(enabled, m.Name))
		for _, h := range m.Hooks {
			out = append(out, candidate{hook: h, waiting: why})
		}
	}
	return slices.DeleteFunc(out, func(c candidate) bool { return c.hook.Config == nil || !c.hook.Config.HasWebhooks() })
}

// moduleWaiting says why a module does not answer its webhooks ("" when
// it does).
func moduleWaiting(module string, known, enabled bool) string {
	switch {
	case !known:
		return fmt.Sprintf("module %s is not running yet (its enabled state is known after the first discovery)", module)
	case !enabled:
		return fmt.Sprintf("module %s is disabled", module)
	}
	return ""
}

// waitingFor says why a hook's module does not answer its webhooks now
// ("" when it does, and for a global hook). A request asks it at once
// rather than reading the table, which sync refreshes every second: a
// module's own Helm upgrade calls its webhook right after the discovery
// that enabled it.
func (w *webhooks) waitingFor(h *loader.Hook) string {
	if h.Module == "" {
		return ""
	}
	return moduleWaiting(h.Module, w.discovered == nil || w.discovered(), w.modules.InEnabledList(h.Module))
}

// desired is the webhook bindings to register: global hooks' and enabled
// modules' hooks', and before the first discovery (!known) the bindings of
// the other modules' hooks that are registered already (inherited); each
// with what keeps it from being registered. kinds are the servers the
// tree needs.
func (w *webhooks) desired(known bool, inherited map[string]bool) (webhook.Bindings, webhookTable, []WebhookBindingStatus, []webhook.Kind) {
	w.mu.Lock() // only one desired at a time
	defer w.mu.Unlock()
	model, _ := w.trees.Current()
	var b webhook.Bindings
	t := webhookTable{admission: map[string]admissionRoute{}, hooks: map[string]*loader.Hook{}}
	status := []WebhookBindingStatus{}
	var kinds []webhook.Kind
	if model == nil {
		return b, t, status, kinds
	}
	// routes of hooks not registered (a disabled module's): a call the API
	// server still sends is answered by the failurePolicy
	fallback := map[string]admissionRoute{}
	for _, c := range candidates(model, known, w.modules.EnabledList()) {
		h := c.hook
		// a module's webhook while it does not run: registered only when
		// the last run registered it and its enabled state is not known
		kept := func(key string) bool { return c.waiting == "" || (!known && inherited[key]) }
		for _, a := range h.Config.Admission {
			kind := admissionKind(a)
			if w.reg != nil && w.reg.Serves(kind) && !slices.Contains(kinds, webhook.Validating) {
				kinds = append(kinds, webhook.Validating) // mutating is served there too
			}
			key := webhook.RegisteredKey(kind, a.Name)
			st := WebhookBindingStatus{Kind: kind, Name: a.Name, Hook: h.Name, Module: h.Module}
			route := admissionRoute{hook: h, binding: a}
			switch other, dup := t.admission[key]; {
			case !kept(key):
				if _, taken := fallback[key]; !taken {
					fallback[key] = route
				}
				if known {
					continue // a disabled module's binding: no status, as before
				}
				st.Error = fmt.Sprintf("not registered until the first discovery: %s", c.waiting)
			case dup:
				st.Error = fmt.Sprintf("webhook %s is bound by hook %s already: not registered for this hook", a.Name, other.hook.Name)
			case w.reg == nil || !w.reg.Serves(kind):
				st.Error = fmt.Sprintf("hook %s binds the %s webhook %s, and the webhook server is not configured: set VALIDATING_WEBHOOK_SERVER_CERT and VALIDATING_WEBHOOK_SERVER_KEY", h.Name, kind, a.Name)
			default:
				t.admission[key] = route
				t.hooks[h.Name] = h
				b.Admission = append(b.Admission, webhook.AdmissionEntry{Hook: h.Name, Binding: a})
			}
			status = append(status, st)
		}
		for _, cb := range h.Config.Conversion {
			if w.reg != nil && w.reg.Serves(webhook.Conversion) && !slices.Contains(kinds, webhook.Conversion) {
				kinds = append(kinds, webhook.Conversion)
			}
			key := webhook.RegisteredKey(webhook.Conversion, cb.CRDName)
			st := WebhookBindingStatus{Kind: webhook.Conversion, Name: cb.Name, Hook: h.Name, Module: h.Module, CRD: cb.CRDName}
			switch {
			case !kept(key):
				if known {
					continue
				}
				st.Error = fmt.Sprintf("not registered until the first discovery: %s", c.waiting)
			case w.reg == nil || !w.reg.Serves(webhook.Conversion):
				st.Error = fmt.Sprintf("hook %s binds a conversion of CRD %s, and the conversion webhook server is not configured: set CONVERSION_WEBHOOK_SERVER_CERT and CONVERSION_WEBHOOK_SERVER_KEY", h.Name, cb.CRDName)
			default:
				t.hooks[h.Name] = h
				entry := webhook.ConversionEntry{Hook: h.Name, Binding: cb}
				t.conversion = append(t.conversion, entry)
				b.Conversion = append(b.Conversion, entry)
			}
			status = append(status, st)
		}
	}
	for key, route := range fallback {
		if _, ok := t.admission[key]; !ok {
			t.admission[key] = route
		}
	}
	return b, t, status, kinds
}

// loop keeps the registration in step with the running tree until ctx
// ends. Configurations stay when the operator stops: a restart must not
// open a window in which objects go unchecked.
func (w *webhooks) loop(ctx context.Context) {
	for {
		w.sync(ctx)
		select {
		case <-ctx.Done():
			return
		case <-w.cfg.After(webhookSyncEvery):
		}
	}
}

// sync routes requests by the running tree, starts the servers it needs
// and registers its bindings, from start-up on: the first 'reload all
// modules' may itself need the webhooks to answer (a module whose chart
// creates objects its own webhook checks), so none of this waits for it.
func (w *webhooks) sync(ctx context.Context) {
	known := w.discovered == nil || w.discovered()
	var err error
	if w.reg != nil && !known && w.inherited == nil {
		// read until it succeeds: without it the last run's registration
		// of modules not yet known would be stripped
		w.inherited, err = w.reg.Registered(ctx)
	}
	b, t, status, kinds := w.desired(known, w.inherited)
	for _, s := range status {
		if s.Error != "" {
			w.logger.Debug("webhook binding not registered", "hook", s.Hook, "module", s.Module, "binding", s.Name, "error", s.Error)
		}
	}
	sum := digestOf(b)
	now := w.cfg.Now()
	w.mu.Lock()
	w.table = t
	w.status.Bindings = status
	current := sum == w.applied && now.Sub(w.appliedAt) < webhookRewriteEvery
	w.mu.Unlock()
	if w.reg == nil {
		return
	}
	if l, ok := w.reg.(webhookListener); ok && err == nil && len(kinds) > 0 {
		err = l.Listen(ctx, kinds)
	}
	if err == nil && current {
		return
	}
	if err == nil {
		err = w.reg.Apply(ctx, b)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if w.status.Error != err.Error() {
			w.logger.Error("webhook registration failed", "error", err)
		}
		w.status.Error, w.applied = err.Error(), ""
		return
	}
	w.status.Error, w.applied, w.appliedAt = "", sum, now
}

func digestOf(v any) string {
	b, _ := json.Marshal(v)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// webhookStatus is the /status view (nil when no tree binds a webhook).
func (w *webhooks) webhookStatus() *WebhookStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.status.Bindings) == 0 && w.status.Error == "" {
		return nil
	}
	st := WebhookStatus{Bindings: slices.Clone(w.status.Bindings), Error: w.status.Error}
	return &st
}

func (w *webhooks) current() webhookTable {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.table
}

// webhookDebugBindings are a hook's webhook bindings for `hook list`: an
// admission webhook with its name, a conversion with its CRD as the kind.
func webhookDebugBindings(c *loader.HookConfig) []DebugBinding {
	var out []DebugBinding
	for _, a := range c.Admission {
		b := loader.KubernetesValidating
		if a.Mutating {
			b = loader.KubernetesMutating
		}
		out = append(out, DebugBinding{Binding: b, Name: a.Name})
	}
	for _, v := range c.Conversion {
		out = append(out, DebugBinding{Binding: loader.KubernetesConversion, Name: v.Name, Kind: v.CRDName})
	}
	return out
}
