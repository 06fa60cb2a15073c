package webhookrun

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/webhook"
)

// TestAdmitByFailurePolicy: a request for a webhook whose module does not
// run its hook (before the first discovery, or disabled) is answered at
// once by the failurePolicy, without running the hook; a global hook's
// and an enabled module's webhook run theirs.
func TestAdmitByFailurePolicy(t *testing.T) {
	t.Parallel()
	model := modelOf([]*loader.Hook{hookOf("global/hooks/g.sh", "", []loader.AdmissionBinding{validating("global.example.com", admissionregv1.Fail)})},
		map[string][]*loader.Hook{"guard": {hookOf("guard/hooks/v.sh", "guard", []loader.AdmissionBinding{
			validating("strict.example.com", admissionregv1.Fail), validating("lenient.example.com", admissionregv1.Ignore)})}})
	for _, tc := range []struct {
		name    string
		enabled []string // nil: no discovery yet
		webhook string
		// ran: the hook ran; else the answer: allowed and the start of
		// the message (Fail) or warning (Ignore)
		ran     bool
		allowed bool
		says    string
	}{
		{name: "before discovery, Fail", webhook: "strict.example.com",
			says: "webhook strict.example.com of hook guard/hooks/v.sh not checked: module guard is not running yet (its enabled state is known after the first discovery); denied by failurePolicy Fail"},
		{name: "before discovery, Ignore", webhook: "lenient.example.com", allowed: true,
			says: "webhook lenient.example.com of hook guard/hooks/v.sh not checked: module guard is not running yet (its enabled state is known after the first discovery); allowed by failurePolicy Ignore"},
		{name: "before discovery, a global hook runs", webhook: "global.example.com", ran: true, allowed: true},
		{name: "disabled, Fail", enabled: []string{}, webhook: "strict.example.com",
			says: "webhook strict.example.com of hook guard/hooks/v.sh not checked: module guard is disabled; denied by failurePolicy Fail"},
		{name: "disabled, Ignore", enabled: []string{}, webhook: "lenient.example.com", allowed: true,
			says: "webhook lenient.example.com of hook guard/hooks/v.sh not checked: module guard is disabled; allowed by failurePolicy Ignore"},
		{name: "enabled: the hook runs", enabled: []string{"guard"}, webhook: "strict.example.com", ran: true, allowed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			trees, modules := state(model, tc.enabled)
			runner := &fakeRunner{answer: func(HookRun) ([]byte, error) { return []byte(`{"allowed":true}`), nil }}
			// the last run registered both of guard's webhooks
			reg := &fakeRegistrar{registered: map[string]bool{"validating/strict.example.com": true, "validating/lenient.example.com": true}}
			w := New(Options{Logger: quiet(), Trees: trees, Modules: modules, Registrar: reg, Runner: runner})
			if err := w.sync(t.Context()); err != nil {
				t.Fatal(err)
			}
			if !w.Routes(webhook.Validating, tc.webhook) {
				t.Fatalf("%s not routed", tc.webhook)
			}
			res, err := w.Admit(t.Context(), webhook.Validating, tc.webhook, &admissionv1.AdmissionReview{Request: &admissionv1.AdmissionRequest{}})
			if err != nil {
				t.Fatal(err)
			}
			if ran := len(runner.ran()) == 1; ran != tc.ran {
				t.Errorf("hook ran: %v, want %v", ran, tc.ran)
			}
			got := res.Message
			if res.Allowed {
				got = strings.Join(res.Warnings, ";")
			}
			if res.Allowed != tc.allowed || got != tc.says {
				t.Errorf("allowed %v %q, want %v %q", res.Allowed, got, tc.allowed, tc.says)
			}
		})
	}
}

// TestAdmitRunsTheHook: the hook gets one binding context of the
// documented type with the review and the snapshots its binding asks for;
// its response is the answer, a response that is not one denies, and a
// failed run is an error (the API server applies the failurePolicy).
func TestAdmitRunsTheHook(t *testing.T) {
	t.Parallel()
	policy := loader.AdmissionBinding{Name: "policy.example.com", Group: "g", IncludeSnapshotsFrom: []string{"extra"}}
	mutate := loader.AdmissionBinding{Name: "mutate.example.com", Mutating: true}
	hook := hookOf("global/hooks/g.sh", "", []loader.AdmissionBinding{policy, mutate})
	hook.Config.Kubernetes = []loader.KubernetesBinding{{Name: "in-group", Group: "g"}, {Name: "other"}}
	model := modelOf([]*loader.Hook{hook}, nil)
	for _, tc := range []struct {
		name    string
		kind    webhook.Kind
		webhook string
		answer  string
		fail    error
		// want: the context's type and snapshots; then the answer
		typ       string
		snapshots string // fmt of the snapshots ("" none)
		allowed   bool
		message   string
		err       string
	}{
		{name: "validating with snapshots", kind: webhook.Validating, webhook: "policy.example.com", answer: `{"allowed":false,"message":"no"}`,
			typ: typeValidating, snapshots: "map[extra:[map[filterResult:global/hooks/g.sh/extra]] in-group:[map[filterResult:global/hooks/g.sh/in-group]]]", message: "no"},
		{name: "mutating without", kind: webhook.Mutating, webhook: "mutate.example.com", answer: `{"allowed":true}`,
			typ: typeMutating, allowed: true},
		{name: "a response that is not one denies", kind: webhook.Validating, webhook: "policy.example.com", answer: `nope`,
			typ: typeValidating, snapshots: "map[extra:[map[filterResult:global/hooks/g.sh/extra]] in-group:[map[filterResult:global/hooks/g.sh/in-group]]]", message: "the hook's response is not valid"},
		{name: "a failed run is an error", kind: webhook.Mutating, webhook: "mutate.example.com", fail: errors.New("hook global/hooks/g.sh failed: exit status 1"),
			typ: typeMutating, err: "hook global/hooks/g.sh failed: exit status 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			trees, modules := state(model, []string{})
			runner := &fakeRunner{answer: func(HookRun) ([]byte, error) { return []byte(tc.answer), tc.fail }}
			w := New(Options{Logger: quiet(), Trees: trees, Modules: modules, Registrar: &fakeRegistrar{}, Runner: runner, Snapshots: fakeSnapshots{}})
			if err := w.sync(t.Context()); err != nil {
				t.Fatal(err)
			}
			review := &admissionv1.AdmissionReview{Request: &admissionv1.AdmissionRequest{Name: "obj"}}
			res, err := w.Admit(t.Context(), tc.kind, tc.webhook, review)
			if fmt.Sprint(err) != fmt.Sprint(errors.New(tc.err)) && (tc.err != "" || err != nil) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			runs := runner.ran()
			if len(runs) != 1 {
				t.Fatalf("%d runs", len(runs))
			}
			r := runs[0]
			if r.Hook != hook || r.Binding != tc.webhook || r.Type != tc.typ || r.Context["type"] != tc.typ || r.Context["binding"] != tc.webhook || r.Context["review"] != review {
				t.Errorf("run %+v", r)
			}
			if r.ResponseVar != "VALIDATING_RESPONSE_PATH" || r.ResponseLimit <= 0 {
				t.Errorf("response %s bounded by %d", r.ResponseVar, r.ResponseLimit)
			}
			snaps, ok := r.Context["snapshots"]
			if got := fmt.Sprint(snaps); (tc.snapshots == "") == ok || (ok && got != tc.snapshots) {
				t.Errorf("snapshots %s, want %q", got, tc.snapshots)
			}
			if tc.err == "" && (res.Allowed != tc.allowed || res.Message != tc.message) {
				t.Errorf("answer %+v, want allowed %v %q", res, tc.allowed, tc.message)
			}
		})
	}
}

// TestAdmitUnknownWebhook: a webhook the running tree does not bind is an
// error, and runs nothing.
func TestAdmitUnknownWebhook(t *testing.T) {
	t.Parallel()
	trees, modules := state(modelOf(nil, nil), []string{})
	runner := &fakeRunner{}
	w := New(Options{Logger: quiet(), Trees: trees, Modules: modules, Registrar: &fakeRegistrar{}, Runner: runner})
	if err := w.sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err := w.Admit(t.Context(), webhook.Validating, "gone.example.com", &admissionv1.AdmissionReview{})
	if err == nil || err.Error() != "no hook of the running tree binds the validating webhook gone.example.com" || len(runner.ran()) != 0 {
		t.Errorf("error %v, %d runs", err, len(runner.ran()))
	}
}

// widget is a Widget object of group example.com at version.
func widget(version, name string) runtime.RawExtension {
	return runtime.RawExtension{Raw: mustJSON(map[string]any{"apiVersion": "example.com/" + version, "kind": "Widget", "metadata": map[string]any{"name": name}})}
}

// TestConvert: objects of each apiVersion go their own way along the
// conversions the tree binds, one hook run a step (the conversion's
// binding context and its response limit), and come back in the
// request's order; a module that does not run its hook fails the
// conversion saying why.
func TestConvert(t *testing.T) {
	t.Parallel()
	conv := loader.ConversionBinding{Name: "widgets", CRDName: "widgets.example.com", Conversions: []loader.ConversionRule{
		{FromVersion: "v1", ToVersion: "v2"}, {FromVersion: "v2", ToVersion: "v3"}, {FromVersion: "v3", ToVersion: "v2"}}}
	model := modelOf(nil, map[string][]*loader.Hook{"widgets": {hookOf("widgets/hooks/c.sh", "widgets", nil, conv)}})
	// the fake hook converts to its context's toVersion
	convert := func(run HookRun) ([]byte, error) {
		review := run.Context["review"].(apiextv1.ConversionReview)
		var out []map[string]any
		for _, o := range review.Request.Objects {
			var m map[string]any
			if err := unmarshal(o.Raw, &m); err != nil {
				return nil, err
			}
			m["apiVersion"] = "example.com/" + run.Context["toVersion"].(string)
			out = append(out, m)
		}
		return mustJSON(map[string]any{"convertedObjects": out}), nil
	}
	for _, tc := range []struct {
		name    string
		enabled []string
		objects []runtime.RawExtension
		desired string
		want    string // the objects' names@versions, or the error
		steps   string // fromVersion>toVersion of each run
	}{
		{name: "mixed versions, in order", enabled: []string{"widgets"},
			objects: []runtime.RawExtension{widget("v1", "a"), widget("v3", "b"), widget("v1", "c"), widget("v2", "d")}, desired: "example.com/v2",
			want: "a@v2 b@v2 c@v2 d@v2", steps: "v1>v2 v3>v2"},
		{name: "two steps", enabled: []string{"widgets"},
			objects: []runtime.RawExtension{widget("v1", "a")}, desired: "example.com/v3",
			want: "a@v3", steps: "v1>v2 v2>v3"},
		{name: "no path", enabled: []string{"widgets"},
			objects: []runtime.RawExtension{widget("v3", "a")}, desired: "example.com/v1",
			want: "no hook converts widgets.example.com from example.com/v3 to example.com/v1"},
		{name: "module disabled", enabled: []string{},
			objects: []runtime.RawExtension{widget("v1", "a")}, desired: "example.com/v2",
			want: "hook widgets/hooks/c.sh converts widgets.example.com from example.com/v1: not run, module widgets is disabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			trees, modules := state(model, tc.enabled)
			runner := &fakeRunner{answer: convert}
			reg := &fakeRegistrar{}
			w := New(Options{Logger: quiet(), Trees: trees, Modules: modules, Registrar: reg, Runner: runner})
			if len(tc.enabled) == 0 {
				// a request between the discovery that disabled the
				// module and the next sync: the table still routes the
				// conversion registered while the module ran
				enable(modules, "widgets")
				if err := w.sync(t.Context()); err != nil {
					t.Fatal(err)
				}
				enable(modules)
			} else if err := w.sync(t.Context()); err != nil {
				t.Fatal(err)
			}
			review := &apiextv1.ConversionReview{Request: &apiextv1.ConversionRequest{UID: "u", DesiredAPIVersion: tc.desired, Objects: tc.objects}}
			objs, err := w.Convert(t.Context(), "widgets.example.com", review)
			var got []string
			for _, o := range objs {
				var m struct {
					APIVersion string            `json:"apiVersion"`
					Metadata   map[string]string `json:"metadata"`
				}
				if err := unmarshal(o.Raw, &m); err != nil {
					t.Fatal(err)
				}
				got = append(got, m.Metadata["name"]+"@"+strings.TrimPrefix(m.APIVersion, "example.com/"))
			}
			if err != nil {
				got = []string{err.Error()}
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("got %q, want %q", strings.Join(got, " "), tc.want)
			}
			var steps []string
			for _, r := range runner.ran() {
				steps = append(steps, fmt.Sprint(r.Context["fromVersion"], ">", r.Context["toVersion"]))
				if r.Type != typeConversion || r.Context["type"] != typeConversion || r.ResponseVar != "CONVERSION_RESPONSE_PATH" || r.ResponseLimit != webhook.DefaultMaxRequestBytes {
					t.Errorf("run %+v", r)
				}
			}
			if strings.Join(steps, " ") != tc.steps {
				t.Errorf("steps %q, want %q", strings.Join(steps, " "), tc.steps)
			}
		})
	}
}
