package webhookrun

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/addonops/addon-operator/lifecycle/runstate"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/webhook"
)

func guardModel(bindings ...loader.AdmissionBinding) *loader.Model {
	global := &loader.Hook{Name: "global/hooks/g.sh", Config: &loader.HookConfig{
		Admission: []loader.AdmissionBinding{{Name: "global.example.com", FailurePolicy: admissionregv1.Fail}},
	}}
	hook := &loader.Hook{Name: "001-guard/hooks/v.sh", Module: "guard", Config: &loader.HookConfig{Admission: bindings}}
	return &loader.Model{Global: &loader.Global{Hooks: []*loader.Hook{global}}, Modules: []*loader.Module{{Name: "guard", Hooks: []*loader.Hook{hook}}}}
}

// TestWebhooksBeforeDiscovery: from the first sync on, before any
// discovery, the servers listen and the registration follows the tree:
// a module's webhook the last run registered stays (its module may be
// enabled), one the tree no longer binds goes, one not registered before
// is not added (its module may be disabled); a request for a module's
// webhook is answered by its failurePolicy until discovery enables the
// module, then reaches the hook.
func TestWebhooksBeforeDiscovery(t *testing.T) {
	strict := loader.AdmissionBinding{Name: "strict.guard.example.com", FailurePolicy: admissionregv1.Fail}
	lenient := loader.AdmissionBinding{Name: "lenient.guard.example.com", FailurePolicy: admissionregv1.Ignore}
	added := loader.AdmissionBinding{Name: "added.guard.example.com", FailurePolicy: admissionregv1.Fail}
	type step struct {
		name       string
		model      *loader.Model
		enabled    []string // nil: no discovery yet
		registered string   // the admission webhooks of the last Apply
		// answers by webhook name: "hook" (the hook runs), "denied: ..."
		// or "allowed: ..." (the failurePolicy answers)
		answers map[string]string
	}
	steps := []step{
		{name: "restart: the last run's webhooks stay, none is added", model: guardModel(strict, lenient, added),
			registered: "global.example.com,strict.guard.example.com,lenient.guard.example.com",
			answers: map[string]string{
				"global.example.com":        "hook",
				"strict.guard.example.com":  "denied: webhook strict.guard.example.com of hook 001-guard/hooks/v.sh not checked: module guard is not running yet",
				"lenient.guard.example.com": "allowed: webhook lenient.guard.example.com of hook 001-guard/hooks/v.sh not checked: module guard is not running yet",
				"added.guard.example.com":   "denied: ",
			}},
		{name: "a tree without a binding unregisters it before discovery", model: guardModel(lenient, added),
			registered: "global.example.com,lenient.guard.example.com",
			answers:    map[string]string{"strict.guard.example.com": "none"}},
		{name: "discovery enables the module: every binding, each hook runs", model: guardModel(lenient, added), enabled: []string{"guard"},
			registered: "global.example.com,lenient.guard.example.com,added.guard.example.com",
			answers:    map[string]string{"lenient.guard.example.com": "hook", "added.guard.example.com": "hook"}},
		{name: "disabled: unregistered, a late call answered by the failurePolicy", model: guardModel(lenient, added), enabled: []string{},
			registered: "global.example.com",
			answers: map[string]string{
				"added.guard.example.com":   "denied: webhook added.guard.example.com of hook 001-guard/hooks/v.sh not checked: module guard is disabled; denied by failurePolicy Fail",
				"lenient.guard.example.com": "allowed: ",
			}},
	}
	trees := &runstate.Trees{}
	modules := runstate.NewModules()
	reg := &fakeRegistrar{registered: map[string]bool{
		"validating/strict.guard.example.com": true, "validating/lenient.guard.example.com": true, "validating/global.example.com": true,
	}}
	w := New(Options{Logger: slog.New(slog.DiscardHandler), Trees: trees, Modules: modules, Registrar: reg})
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			trees.Start(&runstate.Tree{Model: s.model})
			if s.enabled != nil {
				modules.Edit(func(_ map[string]*runstate.Module, enabled *[]string) { *enabled = s.enabled })
				modules.MarkDiscovered()
				if len(s.enabled) > 0 {
					// a request right after discovery, before the next
					// sync: the module's own Helm upgrade
					if route, ok := w.current().admission["validating/lenient.guard.example.com"]; !ok || w.waitingFor(route.hook) != "" {
						t.Errorf("right after discovery the request does not reach the hook")
					}
				}
			}
			_ = w.sync(t.Context())
			if got := reg.last(); got != s.registered {
				t.Errorf("registered %q, want %q", got, s.registered)
			}
			if !slices.Equal(reg.listening, []webhook.Kind{webhook.Validating}) {
				t.Errorf("listening on %v", reg.listening)
			}
			for name, want := range s.answers {
				route, ok := w.current().admission[webhook.RegisteredKey(webhook.Validating, name)]
				got := "none"
				switch {
				case ok && w.waitingFor(route.hook) == "":
					got = "hook"
				case ok:
					res, err := w.Admit(t.Context(), webhook.Validating, name, &admissionv1.AdmissionReview{Request: &admissionv1.AdmissionRequest{}})
					if err != nil {
						t.Fatal(err)
					}
					got = "denied: " + res.Message
					if res.Allowed {
						got = "allowed: " + strings.Join(res.Warnings, ";")
					}
				}
				if !strings.HasPrefix(got, want) {
					t.Errorf("%s: %q, want %q…", name, got, want)
				}
			}
		})
	}
}
