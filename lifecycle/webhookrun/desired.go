package webhookrun

import (
	"fmt"
	"slices"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/webhook"
)

// table is what requests are routed to.
type table struct {
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
func candidates(model *loader.Model, known bool, enabled func(module string) bool) []candidate {
	var out []candidate
	for _, h := range model.Global.Hooks {
		if bindsWebhooks(h) {
			out = append(out, candidate{hook: h})
		}
	}
	// it runs on every change of a module's state: the few modules with
	// webhooks are looked up in the enabled list, which is not copied
	// (docs/performance.md)
	for _, m := range model.Modules {
		for _, h := range m.Hooks {
			if bindsWebhooks(h) {
				out = append(out, candidate{hook: h, waiting: moduleWaiting(m.Name, known, enabled(m.Name))})
			}
		}
	}
	return out
}

func bindsWebhooks(h *loader.Hook) bool {
	return h.Config != nil && h.Config.HasWebhooks()
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
// rather than reading the table, which sync refreshes only once it has
// woken on the registry's change: a module's own Helm upgrade calls its
// webhook right after the discovery that enabled it.
func (w *Webhooks) waitingFor(h *loader.Hook) string {
	if h.Module == "" {
		return ""
	}
	return moduleWaiting(h.Module, w.modules.WasDiscovered(), w.modules.InEnabledList(h.Module))
}

// desired is the webhook bindings to register: global hooks' and enabled
// modules' hooks', and before the first discovery (!known) the bindings of
// the other modules' hooks that are registered already (inherited); each
// with what keeps it from being registered. kinds are the servers the
// tree needs.
func (w *Webhooks) desired(known bool, inherited map[string]bool) (webhook.Bindings, table, []BindingStatus, []webhook.Kind) {
	w.mu.Lock() // only one desired at a time
	defer w.mu.Unlock()
	model, _ := w.trees.Current()
	var b webhook.Bindings
	t := table{admission: map[string]admissionRoute{}, hooks: map[string]*loader.Hook{}}
	status := []BindingStatus{}
	var kinds []webhook.Kind
	if model == nil {
		return b, t, status, kinds
	}
	// routes of hooks not registered (a disabled module's): a call the API
	// server still sends is answered by the failurePolicy
	fallback := map[string]admissionRoute{}
	for _, c := range candidates(model, known, w.modules.InEnabledList) {
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
			st := BindingStatus{Kind: kind, Name: a.Name, Hook: h.Name, Module: h.Module}
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
			st := BindingStatus{Kind: webhook.Conversion, Name: cb.Name, Hook: h.Name, Module: h.Module, CRD: cb.CRDName}
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
