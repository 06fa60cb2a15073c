package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/addonops/addon-operator/internal/testenv"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/webhook"
)

// withWebhookServer gives e a webhook server on 127.0.0.1 answered by its
// operator, registered under a URL (the API server here reaches no
// Service), with request bodies bounded by maxBody.
func withWebhookServer(t *testing.T, e *env, configName string, maxBody int64) {
	t.Helper()
	caFile, certFile, keyFile, err := testenv.ServingCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// the operator's answers, once it exists: the address must be known
	// before, for the registrar
	var answers atomic.Pointer[http.Handler]
	srv := &webhook.Server{Addr: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile, Logger: quiet(),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*answers.Load()).ServeHTTP(w, r) })}
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := srv.Listen(ctx)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ext := apiextensions.NewForConfigOrDie(restCfg)
	endpoint := &webhook.Endpoint{URL: "https://" + ln.Addr().String(), CAFile: caFile}
	e.webhooks = webhook.NewRegistrar(webhook.RegistrarOptions{
		Client: client, Ext: ext, Instance: kube.InstanceID(e.ns, e.cmName), ConfigurationName: configName,
		Admission: endpoint, Conversion: endpoint, Logger: quiet(),
	})
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	e.beforeRun = func(o *Operator) {
		h := webhook.NewHandler(webhook.HandlerOptions{Reviewer: o.Webhooks(), Logger: quiet(), MaxRequestBytes: maxBody})
		answers.Store(&h)
		wg.Go(func() { _ = ln.Serve(ctx) })
	}
}

const validatingHook = `#!/usr/bin/env bash
set -euo pipefail
if [ "${1:-}" = "--config" ]; then cat <<EOF
configVersion: v1
kubernetes:
- name: locks
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: ["%[1]s"]}}
  labelSelector: {matchLabels: {lock: "%[1]s"}}
  executeHookOnEvent: []
  executeHookOnSynchronization: false
  jqFilter: .metadata.name
kubernetesValidating:
- name: cm-policy.webhook.test
  labelSelector: {matchLabels: {webhook-test: "%[1]s"}}
  includeSnapshotsFrom: [locks]
  failurePolicy: Fail
  timeoutSeconds: 3
  rules:
  - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"], scope: Namespaced}
- name: lenient.webhook.test
  labelSelector: {matchLabels: {webhook-test-lenient: "%[1]s"}}
  failurePolicy: Ignore
  timeoutSeconds: 2
  rules:
  - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"], scope: Namespaced}
%[2]s
EOF
exit 0; fi
jq -e '.[0].type == "Validating" and (.[0].binding | endswith(".webhook.test"))' "$BINDING_CONTEXT_PATH" >/dev/null
name=$(jq -r '.[0].review.request.name' "$BINDING_CONTEXT_PATH")
case "$name" in
  bad-*) echo '{"allowed":false,"message":"names starting with bad- are refused"}' > "$VALIDATING_RESPONSE_PATH" ;;
  locked-*) jq -c '.[0].snapshots.locks | if length > 0 then {allowed: false, message: ("locked by " + .[0].filterResult)} else {allowed: true} end' \
      "$BINDING_CONTEXT_PATH" > "$VALIDATING_RESPONSE_PATH" ;;
  warn-*) echo '{"allowed":true,"warnings":["careful with warn-"]}' > "$VALIDATING_RESPONSE_PATH" ;;
  hang-*) sleep 60 ;;
  fail-*) echo "password=s3cr3t" >&2; exit 1 ;;
  *) echo '{"allowed":true}' > "$VALIDATING_RESPONSE_PATH" ;;
esac
`

// mutatingHook labels the ConfigMaps it admits.
const mutatingHook = `#!/usr/bin/env bash
set -euo pipefail
if [ "${1:-}" = "--config" ]; then cat <<EOF
configVersion: v1
kubernetesMutating:
- name: cm-label.webhook.test
  labelSelector: {matchLabels: {webhook-test: "%[1]s"}}
  rules:
  - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"], scope: Namespaced}
EOF
exit 0; fi
jq -e '.[0].type == "Mutating"' "$BINDING_CONTEXT_PATH" >/dev/null
patch=$(echo '[{"op":"add","path":"/metadata/labels/mutated","value":"yes"}]' | base64 -w0)
echo "{\"allowed\":true,\"patch\":\"$patch\"}" > "$ADMISSION_RESPONSE_PATH"
`

const conversionHook = `#!/usr/bin/env bash
set -euo pipefail
if [ "${1:-}" = "--config" ]; then cat <<EOF
configVersion: v1
kubernetesCustomResourceConversion:
- name: widgets
  crdName: %[1]s
  conversions:
  - {fromVersion: v1, toVersion: v2}
  - {fromVersion: v2, toVersion: v1}
EOF
exit 0; fi
jq -c --arg group %[2]q '.[0] as $c | {convertedObjects: [$c.review.request.objects[] |
  if $c.toVersion == "v2" then .spec = {colour: .spec.color} else .spec = {color: .spec.colour} end
  | .apiVersion = $group + "/" + $c.toVersion]}' "$BINDING_CONTEXT_PATH" > "$CONVERSION_RESPONSE_PATH"
`

// widgetCRD has two versions, v1 stored, without a conversion.
func widgetCRD(group string) *apiextv1.CustomResourceDefinition {
	schemaFor := func(field string) *apiextv1.CustomResourceValidation {
		return &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{field: {Type: "string"}}},
		}}}
	}
	return &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextv1.NamespaceScoped,
			Names: apiextv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schemaFor("color")},
				{Name: "v2", Served: true, Schema: schemaFor("colour")},
			},
		},
	}
}

// A tree with a kubernetesValidating and a kubernetesCustomResourceConversion
// hook, as shell-operator's users write them, runs unchanged: the API
// server calls the operator's webhook over TLS, and the registration
// follows the tree.
func TestWebhooksRealAPIServer(t *testing.T) {
	t.Parallel()
	cluster(t)
	group := fmt.Sprintf("w%d.webhook.test", nsSeq.Add(1))
	crdName := "widgets." + group
	e := parallelSetup(t, map[string]string{"modules/.keep": ""}, nil)
	e.dir = tree(t, map[string]string{
		"global-hooks/validate.sh": fmt.Sprintf(validatingHook, e.ns, ""),
		"global-hooks/convert.sh":  fmt.Sprintf(conversionHook, crdName, group),
		"global-hooks/mutate.sh":   fmt.Sprintf(mutatingHook, e.ns),
		"modules/.keep":            "",
	})
	configName := "hooks-" + e.ns
	withWebhookServer(t, e, configName, 64<<10)
	ext := apiextensions.NewForConfigOrDie(restCfg)
	ctx := t.Context()
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, widgetCRD(group), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), crdName, metav1.DeleteOptions{})
	})
	vwc := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	t.Cleanup(func() {
		_ = vwc.Delete(context.Background(), configName, metav1.DeleteOptions{})
		_ = client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), configName, metav1.DeleteOptions{})
	})
	e.start()
	e.waitReady()

	var cfg *admissionregv1.ValidatingWebhookConfiguration
	e.eventually("the ValidatingWebhookConfiguration", func() bool {
		var err error
		cfg, err = vwc.Get(ctx, configName, metav1.GetOptions{})
		return err == nil
	})
	if len(cfg.Webhooks) != 2 || cfg.Webhooks[0].Name != "cm-policy.webhook.test" || cfg.Labels[kube.LabelInstance] != kube.InstanceID(e.ns, e.cmName) {
		t.Fatalf("configuration = %+v", cfg)
	}
	e.eventually("the CRD's conversion webhook", func() bool {
		crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
		return err == nil && crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextv1.WebhookConverter
	})

	// validating: refused with the hook's message, allowed, allowed with a warning
	warnings := &warningRecorder{}
	wcfg := rest.CopyConfig(restCfg)
	wcfg.WarningHandler = warnings
	wclient := kubernetes.NewForConfigOrDie(wcfg)
	create := func(name string, data map[string]string) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"webhook-test": e.ns}}, Data: data}
		_, err := wclient.CoreV1().ConfigMaps(e.ns).Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	// the API server may read the configuration a moment after it is written
	e.eventually("the webhook refuses bad-one", func() bool {
		err := create("bad-one", nil)
		return err != nil && strings.Contains(err.Error(), "names starting with bad- are refused")
	})
	if err := create("bad-two", nil); err == nil || !strings.Contains(err.Error(), `admission webhook "cm-policy.webhook.test" denied the request: names starting with bad- are refused`) {
		t.Fatalf("bad-two: %v", err)
	}
	if err := create("good", nil); err != nil {
		t.Fatalf("good: %v", err)
	}
	// mutating: the hook's patch labelled it
	if cm, err := client.CoreV1().ConfigMaps(e.ns).Get(ctx, "good", metav1.GetOptions{}); err != nil || cm.Labels["mutated"] != "yes" {
		t.Fatalf("good was not mutated: %v %v", cm.Labels, err)
	}
	// snapshots: the hook sees its kubernetes binding's objects
	if err := create("locked-zero", nil); err != nil {
		t.Fatalf("locked-zero, before the lock: %v", err)
	}
	lock := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "the-lock", Labels: map[string]string{"lock": e.ns}}}
	if _, err := client.CoreV1().ConfigMaps(e.ns).Create(ctx, lock, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("locked-one refused with the snapshot's object", func() bool {
		err := create("locked-one", nil)
		return err != nil && strings.Contains(err.Error(), "locked by the-lock")
	})
	if err := create("warn-me", nil); err != nil {
		t.Fatalf("warn-me: %v", err)
	}
	if !warnings.has("careful with warn-") {
		t.Fatalf("warnings = %v", warnings.all())
	}

	// a hook that hangs is cut at the webhook's timeout; failurePolicy Fail refuses
	start := time.Now()
	err := create("hang-one", nil)
	if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Fatalf("hang-one: %v", err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Fatalf("hang-one answered after %s", took)
	}

	// failurePolicy Ignore: the same hang lets the object through
	lenient := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hang-lenient", Labels: map[string]string{"webhook-test-lenient": e.ns}}}
	if _, err := client.CoreV1().ConfigMaps(e.ns).Create(ctx, lenient, metav1.CreateOptions{}); err != nil {
		t.Fatalf("hang-lenient, failurePolicy Ignore: %v", err)
	}

	// a hook that fails fails the call; what it printed stays in the log
	err = create("fail-one", nil)
	if err == nil || !strings.Contains(err.Error(), "failed calling webhook") || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("fail-one: %v", err)
	}

	// a request body over the bound is refused (and the call fails)
	err = create("big", map[string]string{"k": strings.Repeat("x", 100<<10)})
	if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Fatalf("big: %v", err)
	}

	// conversion: created at v1, read at v2 through the hook
	dyn := dynamic.NewForConfigOrDie(restCfg)
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Widget", "metadata": map[string]any{"name": "w1"}, "spec": map[string]any{"color": "red"},
	}}
	if _, err := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}).Namespace(e.ns).Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *unstructured.Unstructured
	e.eventually("w1 read at v2", func() bool {
		got, err = dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v2", Resource: "widgets"}).Namespace(e.ns).Get(ctx, "w1", metav1.GetOptions{})
		return err == nil
	})
	if colour, _, _ := unstructured.NestedString(got.Object, "spec", "colour"); colour != "red" || got.GetAPIVersion() != group+"/v2" {
		t.Fatalf("w1 at v2 = %v", got.Object)
	}

	// objects of several apiVersions go their own ways, in the request's order
	raw := func(version, field, name string) runtime.RawExtension {
		return runtime.RawExtension{Raw: []byte(fmt.Sprintf(`{"apiVersion":%q,"kind":"Widget","metadata":{"name":%q},"spec":{%q:"blue"}}`, group+"/"+version, name, field))}
	}
	mixed := &apiextv1.ConversionReview{Request: &apiextv1.ConversionRequest{UID: "mixed", DesiredAPIVersion: group + "/v1",
		Objects: []runtime.RawExtension{raw("v2", "colour", "a"), raw("v1", "color", "b"), raw("v2", "colour", "c")}}}
	objs, err := e.op.Webhooks().Convert(ctx, crdName, mixed)
	if err != nil || len(objs) != 3 {
		t.Fatalf("mixed conversion: %v %v", objs, err)
	}
	for i, name := range []string{"a", "b", "c"} {
		var o struct {
			APIVersion string            `json:"apiVersion"`
			Metadata   map[string]string `json:"metadata"`
			Spec       map[string]string `json:"spec"`
		}
		if err := json.Unmarshal(objs[i].Raw, &o); err != nil || o.APIVersion != group+"/v1" || o.Metadata["name"] != name || o.Spec["color"] != "blue" {
			t.Errorf("object %d = %s", i, objs[i].Raw)
		}
	}
	mixed.Request.DesiredAPIVersion = group + "/v3"
	if _, err := e.op.Webhooks().Convert(ctx, crdName, mixed); err == nil || !strings.Contains(err.Error(), "no hook converts "+crdName+" from "+group+"/v2 to "+group+"/v3") {
		t.Errorf("no path: %v", err)
	}

	// the tree changes: a third webhook is added, then the hooks go
	write := func(p, c string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(e.dir, p), []byte(c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	second := `- name: second.webhook.test
  labelSelector: {matchLabels: {webhook-test: "` + e.ns + `"}}
  rules:
  - {apiGroups: [""], apiVersions: ["v1"], operations: ["DELETE"], resources: ["secrets"]}`
	write("global-hooks/validate.sh", fmt.Sprintf(validatingHook, e.ns, second))
	e.op.TreeChanged(Revision{})
	e.eventually("a third webhook", func() bool {
		cfg, err := vwc.Get(ctx, configName, metav1.GetOptions{})
		return err == nil && len(cfg.Webhooks) == 3
	})
	if err := os.Remove(filepath.Join(e.dir, "global-hooks/validate.sh")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(e.dir, "global-hooks/convert.sh")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(e.dir, "global-hooks/mutate.sh")); err != nil {
		t.Fatal(err)
	}
	e.op.TreeChanged(Revision{})
	e.eventually("the configuration deleted", func() bool {
		_, err := vwc.Get(ctx, configName, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	e.eventually("the mutating configuration deleted", func() bool {
		_, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, configName, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	e.eventually("the CRD's conversion reset", func() bool {
		crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
		return err == nil && crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextv1.NoneConverter && crd.Labels[webhook.LabelConversion] == ""
	})
	if err := create("bad-after", nil); err != nil {
		t.Fatalf("bad-after, with no webhook: %v", err)
	}
}

type warningRecorder struct {
	mu sync.Mutex
	w  []string
}

func (r *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.w = append(r.w, text)
}

func (r *warningRecorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.w...)
}

func (r *warningRecorder) has(s string) bool {
	for _, w := range r.all() {
		if strings.Contains(w, s) {
			return true
		}
	}
	return false
}
