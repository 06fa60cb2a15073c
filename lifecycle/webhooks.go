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
	trees   *treeHolder
	modules *moduleRegistry
	run     *runner
	bind    *bindings
	reg     WebhookRegistrar // nil: no webhook server configured
	// ready: the first 'reload all modules' converged, so which modules
	// are enabled is known. Until then the registration is left as the
	// last run wrote it (a restart must not strip modules' webhooks or
	// reset their CRDs' conversion), and requests are routed to the hooks
	// of every module of the tree.
	ready func() bool

	mu        sync.Mutex
	table     webhookTable
	status    WebhookStatus
	applied   string // digest of the bindings last registered
	appliedAt time.Time
}

// webhookTable is what requests are routed to.
type webhookTable struct {
	admission  map[string]admissionRoute // by kind/name
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

// desired is the webhook bindings of the running tree: global hooks' and
// enabled modules' hooks', each with what keeps it from being registered.
func (w *webhooks) desired() (webhook.Bindings, webhookTable, []WebhookBindingStatus) {
	w.mu.Lock() // only one desired at a time
	defer w.mu.Unlock()
	model, _ := w.trees.current()
	enabled := w.modules.enabledList()
	known := w.ready == nil || w.ready()
	var b webhook.Bindings
	t := webhookTable{admission: map[string]admissionRoute{}, hooks: map[string]*loader.Hook{}}
	status := []WebhookBindingStatus{}
	if model == nil {
		return b, t, status
	}
	hooks := slices.Clone(model.Global.Hooks)
	for _, m := range model.Modules {
		if !known || slices.Contains(enabled, m.Name) {
			hooks = append(hooks, m.Hooks...)
		}
	}
	for _, h := range hooks {
		if h.Config == nil || !h.Config.HasWebhooks() {
			continue
		}
		for _, a := range h.Config.Admission {
			kind := admissionKind(a)
			st := WebhookBindingStatus{Kind: kind, Name: a.Name, Hook: h.Name, Module: h.Module}
			key := string(kind) + "/" + a.Name
			switch other, dup := t.admission[key]; {
			case dup:
				st.Error = fmt.Sprintf("webhook %s is bound by hook %s already: not registered for this hook", a.Name, other.hook.Name)
			case w.reg == nil || !w.reg.Serves(kind):
				st.Error = fmt.Sprintf("hook %s binds the %s webhook %s, and the webhook server is not configured: set VALIDATING_WEBHOOK_SERVER_CERT and VALIDATING_WEBHOOK_SERVER_KEY", h.Name, kind, a.Name)
			default:
				t.admission[key] = admissionRoute{hook: h, binding: a}
				t.hooks[h.Name] = h
				b.Admission = append(b.Admission, webhook.AdmissionEntry{Hook: h.Name, Binding: a})
			}
			status = append(status, st)
		}
		for _, c := range h.Config.Conversion {
			st := WebhookBindingStatus{Kind: webhook.Conversion, Name: c.Name, Hook: h.Name, Module: h.Module, CRD: c.CRDName}
			if w.reg == nil || !w.reg.Serves(webhook.Conversion) {
				st.Error = fmt.Sprintf("hook %s binds a conversion of CRD %s, and the conversion webhook server is not configured: set CONVERSION_WEBHOOK_SERVER_CERT and CONVERSION_WEBHOOK_SERVER_KEY", h.Name, c.CRDName)
			} else {
				t.hooks[h.Name] = h
				entry := webhook.ConversionEntry{Hook: h.Name, Binding: c}
				t.conversion = append(t.conversion, entry)
				b.Conversion = append(b.Conversion, entry)
			}
			status = append(status, st)
		}
	}
	return b, t, status
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

func (w *webhooks) sync(ctx context.Context) {
	b, t, status := w.desired()
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
	skip := w.reg == nil || (w.ready != nil && !w.ready()) || (sum == w.applied && now.Sub(w.appliedAt) < webhookRewriteEvery)
	w.mu.Unlock()
	if skip {
		return
	}
	err := w.reg.Apply(ctx, b)
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
