package objectpatch

import (
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/addonops/addon-operator/internal/testenv"
)

var shared testenv.Shared

func TestMain(m *testing.M) { os.Exit(shared.Main(m)) }

func mustParse(t *testing.T, s string) []Op {
	t.Helper()
	ops, err := Parse([]byte(s), MaxOps)
	if err != nil {
		t.Fatal(err)
	}
	return ops
}

// The Applier against a real API server: a kind without apiVersion, a CRD
// created after the RESTMapper first looked (a miss refreshes discovery),
// a JQPatch and a MergePatch of the status subresource, and an error that
// names the operation without stopping the ones after it, and a JQPatch
// filter cut at JQTimeout.
func TestApplier(t *testing.T) {
	cp := shared.Get(t)
	ctx := t.Context()
	a, err := New(cp.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc := kubernetes.NewForConfigOrDie(cp.Config)
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "op"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// the mapper's first look, before the CRD exists
	if err := a.Apply(ctx, mustParse(t, `{"operation":"CreateOrUpdate","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"op"}}}`)); err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "ex.addonops.io", Version: "v1", Resource: "things"}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things.ex.addonops.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gvr.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Thing", Plural: "things", Singular: "thing", ListKind: "ThingList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &[]bool{true}[0]}},
			}},
		},
	}
	if _, err := apiextensions.NewForConfigOrDie(cp.Config).ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cp.Config)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := dyn.Resource(gvr).Namespace("op").List(ctx, metav1.ListOptions{}); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	ops := mustParse(t, `---
operation: Create
object: |
  apiVersion: ex.addonops.io/v1
  kind: Thing
  metadata: {name: t, namespace: op}
  spec: {size: 1}
---
operation: JQPatch
kind: Thing
namespace: op
name: t
subresource: status
jqFilter: '.status.seen = .spec.size'
---
operation: MergePatch
kind: Thing
namespace: op
name: absent
mergePatch: {spec: {size: 2}}
---
operation: JSONPatch
kind: ConfigMap
namespace: op
name: c
jsonPatch: '[{"op":"add","path":"/data","value":{"after":"error"}}]'
---
operation: JQPatch
kind: ConfigMap
namespace: op
name: c
jqFilter: 'last(repeat(.))'
`)
	JQTimeout = 300 * time.Millisecond
	t.Cleanup(func() { JQTimeout = 5 * time.Second })
	err = a.Apply(ctx, ops)
	if err == nil || !strings.Contains(err.Error(), `KUBERNETES_PATCH_PATH: operation 3 (MergePatch Thing op/absent): things.ex.addonops.io "absent" not found`) {
		t.Fatalf("error %v, want operation 3 named", err)
	}
	// a filter that never ends is cut at JQTimeout
	if !strings.Contains(err.Error(), "operation 5 (JQPatch ConfigMap op/c): jqFilter: context deadline exceeded") {
		t.Fatalf("error %v, want operation 5 cut at the timeout", err)
	}
	th, err := dyn.Resource(gvr).Namespace("op").Get(ctx, "t", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if seen, _, _ := unstructured.NestedInt64(th.Object, "status", "seen"); seen != 1 {
		t.Fatalf("status.seen %d, want 1 (the JQPatch of the status subresource): %v", seen, th.Object)
	}
	c, err := kc.CoreV1().ConfigMaps("op").Get(ctx, "c", metav1.GetOptions{})
	if err != nil || c.Data["after"] != "error" {
		t.Fatalf("operation 4 after the failed one: %v %v", c, err)
	}
}
