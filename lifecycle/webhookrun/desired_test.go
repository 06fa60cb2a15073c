package webhookrun

import (
	"slices"
	"strings"
	"testing"

	admissionregv1 "k8s.io/api/admissionregistration/v1"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/webhook"
)

// TestRegisteredForTreeAndEnabledModules: once a discovery resolved the
// modules, what is registered is the global hooks' and the enabled
// modules' bindings; a disabled module's are neither registered nor
// shown; a webhook bound twice, or of a server not configured, is shown
// with why it is not registered; the servers to listen on follow.
func TestRegisteredForTreeAndEnabledModules(t *testing.T) {
	t.Parallel()
	widgets := loader.ConversionBinding{Name: "widgets", CRDName: "widgets.example.com",
		Conversions: []loader.ConversionRule{{FromVersion: "v1", ToVersion: "v2"}}}
	mutating := loader.AdmissionBinding{Name: "label.example.com", Mutating: true, FailurePolicy: admissionregv1.Fail}
	model := modelOf(
		[]*loader.Hook{
			hookOf("global/hooks/g.sh", "", []loader.AdmissionBinding{validating("global.example.com", admissionregv1.Fail)}, widgets),
			hookOf("global/hooks/plain.sh", "", nil), // binds no webhook
		},
		map[string][]*loader.Hook{
			"on": {
				hookOf("on/hooks/a.sh", "on", []loader.AdmissionBinding{validating("on.example.com", admissionregv1.Fail), mutating}),
				// the same name again: the first hook keeps it
				hookOf("on/hooks/b.sh", "on", []loader.AdmissionBinding{validating("on.example.com", admissionregv1.Ignore)}),
			},
			"off": {hookOf("off/hooks/x.sh", "off", []loader.AdmissionBinding{validating("off.example.com", admissionregv1.Fail)})},
		})
	for _, tc := range []struct {
		name    string
		serves  map[webhook.Kind]bool // nil: every kind
		noReg   bool                  // no registrar: no webhook server configured
		enabled []string
		// registered: the last Apply ("-": none); status: every binding
		// shown, with its error's start after "=" when it has one
		registered string
		status     []string
		kinds      []webhook.Kind
	}{
		{name: "every server, module on enabled", enabled: []string{"on"},
			registered: "global.example.com,on.example.com,label.example.com,crd:widgets.example.com",
			status:     []string{"global.example.com", "widgets", "on.example.com", "label.example.com", "on.example.com=webhook on.example.com is bound by hook on/hooks/a.sh already"},
			kinds:      []webhook.Kind{webhook.Validating, webhook.Conversion}},
		{name: "no module enabled", enabled: []string{},
			registered: "global.example.com,crd:widgets.example.com",
			status:     []string{"global.example.com", "widgets"},
			kinds:      []webhook.Kind{webhook.Validating, webhook.Conversion}},
		{name: "both modules enabled", enabled: []string{"on", "off"},
			registered: "global.example.com,off.example.com,on.example.com,label.example.com,crd:widgets.example.com",
			status:     []string{"global.example.com", "widgets", "off.example.com", "on.example.com", "label.example.com", "on.example.com=webhook on.example.com is bound by hook"},
			kinds:      []webhook.Kind{webhook.Validating, webhook.Conversion}},
		{name: "no conversion server", enabled: []string{}, serves: map[webhook.Kind]bool{webhook.Validating: true, webhook.Mutating: true},
			registered: "global.example.com",
			status:     []string{"global.example.com", "widgets=hook global/hooks/g.sh binds a conversion of CRD widgets.example.com, and the conversion webhook server is not configured"},
			kinds:      []webhook.Kind{webhook.Validating}},
		{name: "no registrar at all", enabled: []string{}, noReg: true,
			registered: "-",
			status: []string{"global.example.com=hook global/hooks/g.sh binds the validating webhook global.example.com, and the webhook server is not configured",
				"widgets=hook global/hooks/g.sh binds a conversion of CRD widgets.example.com, and the conversion webhook server is not configured"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			trees, modules := state(model, tc.enabled)
			reg := &fakeRegistrar{serves: tc.serves}
			opts := Options{Logger: quiet(), Trees: trees, Modules: modules, Registrar: reg}
			if tc.noReg {
				opts.Registrar = nil
			}
			w := New(opts)
			if err := w.sync(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got := reg.last(); got != tc.registered {
				t.Errorf("registered %q, want %q", got, tc.registered)
			}
			if !tc.noReg && !slices.Equal(reg.listening, tc.kinds) {
				t.Errorf("listening on %v, want %v", reg.listening, tc.kinds)
			}
			st := w.Status()
			if st == nil {
				t.Fatal("no status")
			}
			if len(st.Bindings) != len(tc.status) {
				t.Fatalf("status %+v, want %v", st.Bindings, tc.status)
			}
			for i, want := range tc.status {
				name, msg, _ := strings.Cut(want, "=")
				b := st.Bindings[i]
				if b.Name != name || !strings.HasPrefix(b.Error, msg) || (msg == "") != (b.Error == "") {
					t.Errorf("binding %d: %s %q, want %s %q", i, b.Name, b.Error, name, msg)
				}
			}
		})
	}
}

// TestStatusEmptyWithoutWebhooks: a tree that binds no webhook has no
// webhooks on /status and starts no server, and its empty registration
// removes what an earlier tree registered.
func TestStatusEmptyWithoutWebhooks(t *testing.T) {
	t.Parallel()
	trees, modules := state(modelOf([]*loader.Hook{hookOf("global/hooks/plain.sh", "", nil)}, nil), []string{})
	reg := &fakeRegistrar{}
	w := New(Options{Logger: quiet(), Trees: trees, Modules: modules, Registrar: reg})
	if err := w.sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := w.Status(); st != nil {
		t.Errorf("status %+v, want none", st)
	}
	if reg.listens != 0 {
		t.Errorf("listened for a tree that binds no webhook")
	}
	// an empty registration deletes the last tree's configurations
	if got := reg.last(); got != "" {
		t.Errorf("registered %q, want an empty registration", got)
	}
}
