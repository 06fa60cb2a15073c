package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// opsHook is a hook that writes body to $KUBERNETES_PATCH_PATH and exits
// with code; config is its binding configuration.
func opsHook(config, body string, code int) string {
	return fmt.Sprintf("#!/usr/bin/env bash\nif [ \"${1:-}\" = \"--config\" ]; then echo '%s'; exit 0; fi\ncat > \"$KUBERNETES_PATCH_PATH\" <<'OPS'\n%sOPS\nexit %d\n", config, body, code)
}

// thingsCRD creates a namespaced CRD with a status subresource.
func thingsCRD(t *testing.T) schema.GroupVersionResource {
	t.Helper()
	group := fmt.Sprintf("things%d.example.com", nsSeq.Add(1))
	ext := apiextensions.NewForConfigOrDie(restCfg)
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Thing", Plural: "things", Singular: "thing", ListKind: "ThingList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptrTo(true)}},
			}},
		},
	}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), crd.Name, metav1.DeleteOptions{})
	})
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "things"}
	dyn := dynamic.NewForConfigOrDie(restCfg)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := dyn.Resource(gvr).Namespace("default").List(t.Context(), metav1.ListOptions{})
		if err == nil {
			return gvr
		}
		if time.Now().After(deadline) {
			t.Fatalf("CRD not served: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ptrTo[T any](v T) *T { return &v }

// Hooks' KUBERNETES_PATCH_PATH through a real operator (docs/operator.md,
// "Object patches from hooks"): every operation, JSON lines and YAML
// documents (one of them JSON), an object given as a string, a JQPatch, a
// status subresource patch, a module hook's operations, a failed hook
// applying only its ignoreHookError status patches, a bad operation failing
// the run named, and the cap.
func TestHookObjectPatches(t *testing.T) {
	t.Parallel()
	cluster(t)
	gvr := thingsCRD(t)
	files := merged(map[string]string{"modules/values.yaml": "global: {}\nalphaEnabled: true\n"})
	e := parallelSetup(t, files, nil)
	ns := e.ns
	dyn := dynamic.NewForConfigOrDie(restCfg)
	ctx := t.Context()
	cm := func(name string, data map[string]string) {
		t.Helper()
		if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"del-fg", "del-bg", "del-orphan"} {
		cm(n, nil)
	}
	cm("upd", map[string]string{"old": "1"})
	cm("exists", map[string]string{"keep": "1"})
	cm("fail-cm", map[string]string{"keep": "1"})
	for _, n := range []string{"t1", "t2"} {
		th := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": "Thing", "metadata": map[string]any{"name": n}}}
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, th, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// no garbage collector runs here: a foreground Delete leaves its
	// finalizer, which this removes as the collector would
	go func() {
		for ctx.Err() == nil {
			if c, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "del-fg", metav1.GetOptions{}); err == nil && c.DeletionTimestamp != nil {
				_, _ = client.CoreV1().ConfigMaps(ns).Patch(ctx, "del-fg", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	startup := `{"configVersion":"v1","onStartup":1}`
	jsonLines := strings.NewReplacer("NS", ns).Replace(`{"operation":"CreateOrUpdate","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"upd","namespace":"NS"},"data":{"new":"1"}}}
{"operation":"Create","object":"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: new\n  namespace: NS\ndata:\n  a: \"1\"\n"}
{"operation":"CreateIfNotExists","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"exists","namespace":"NS"},"data":{"replaced":"1"}}}
{"operation":"MergePatch","kind":"ConfigMap","namespace":"NS","name":"new","mergePatch":{"data":{"m":"1"}}}
{"operation":"JSONPatch","apiVersion":"v1","kind":"ConfigMap","namespace":"NS","name":"new","jsonPatch":[{"op":"add","path":"/data/j","value":"1"}]}
{"operation":"MergePatch","kind":"ConfigMap","namespace":"NS","name":"absent","mergePatch":{"data":{"m":"1"}},"ignoreMissingObject":true}
{"operation":"Delete","kind":"ConfigMap","namespace":"NS","name":"del-fg"}
{"operation":"DeleteInBackground","kind":"ConfigMap","namespace":"NS","name":"del-bg"}
{"operation":"DeleteNonCascading","kind":"ConfigMap","namespace":"NS","name":"del-orphan"}
`)
	yamlDocs := strings.NewReplacer("NS", ns, "GV", gvr.GroupVersion().String()).Replace(`operation: JQPatch
kind: ConfigMap
namespace: NS
name: new
jqFilter: '.data.jq = "1"'
---
operation: MergePatch
apiVersion: GV
kind: Thing
namespace: NS
name: t1
subresource: status
mergePatch:
  status: {phase: Ready}
---
{"operation":"CreateOrUpdate","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"from-yaml-json","namespace":"NS"}}}
`)
	schedule := func(q string) string {
		return `{"configVersion":"v1","schedule":[{"name":"tick","crontab":"*/1 * * * * *","queue":"` + q + `"}]}`
	}
	failed := strings.NewReplacer("NS", ns, "GV", gvr.GroupVersion().String()).Replace(`{"operation":"MergePatch","apiVersion":"GV","kind":"Thing","namespace":"NS","name":"t2","subresource":"status","mergePatch":{"status":{"phase":"Failed"}},"ignoreHookError":true}
{"operation":"MergePatch","kind":"ConfigMap","namespace":"NS","name":"fail-cm","mergePatch":{"data":{"changed":"1"}},"ignoreHookError":true}
`)
	bad := strings.NewReplacer("NS", ns).Replace(`{"operation":"CreateOrUpdate","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"before-bad","namespace":"NS"}}}
{"operation":"MergePatch","kind":"ConfigMap","namespace":"NS","name":"missing","mergePatch":{"data":{"m":"1"}}}
`)
	var many strings.Builder
	for i := range 1001 {
		fmt.Fprintf(&many, `{"operation":"CreateOrUpdate","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cap-%d","namespace":"%s"}}}`+"\n", i, ns)
	}
	files = merged(files, map[string]string{
		"global-hooks/a-json.sh":       opsHook(startup, jsonLines, 0),
		"global-hooks/b-yaml.sh":       opsHook(`{"configVersion":"v1","onStartup":2}`, yamlDocs, 0),
		"global-hooks/failed.sh":       opsHook(schedule("failed"), failed, 1),
		"global-hooks/bad.sh":          opsHook(schedule("bad"), bad, 0),
		"global-hooks/cap.sh":          opsHook(schedule("cap"), many.String(), 0),
		"modules/001-alpha/hooks/m.sh": opsHook(startup, strings.ReplaceAll(`{"operation":"CreateOrUpdate","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"from-module","namespace":"NS"}}}`+"\n", "NS", ns), 0),
	})
	// the hooks name the test's namespace, known only after setup
	e.dir = tree(t, files)
	e.start()
	e.waitReady()

	get := func(name string) (*corev1.ConfigMap, error) {
		return client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	}
	data := func(name string) map[string]string {
		t.Helper()
		c, err := get(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return c.Data
	}
	eq := func(name string, want map[string]string) {
		t.Helper()
		if got := data(name); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: data %v, want %v", name, got, want)
		}
	}
	eq("upd", map[string]string{"new": "1"})
	eq("exists", map[string]string{"keep": "1"})
	eq("new", map[string]string{"a": "1", "m": "1", "j": "1", "jq": "1"})
	data("from-yaml-json")
	data("from-module")
	for _, n := range []string{"del-fg", "del-bg", "del-orphan", "absent"} {
		if c, err := get(n); err == nil && c.DeletionTimestamp == nil {
			t.Fatalf("%s still there", n)
		}
	}
	status := func(name string) string {
		th, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p, _, _ := unstructured.NestedString(th.Object, "status", "phase")
		return p
	}
	if p := status("t1"); p != "Ready" {
		t.Fatalf("t1 status.phase %q, want Ready (the status subresource)", p)
	}

	lastError := func(sub string) bool {
		for _, q := range e.op.Status().Queues {
			for _, tk := range q.Tasks {
				if strings.Contains(tk.LastError, sub) {
					return true
				}
			}
		}
		return false
	}
	e.eventually("bad.sh to fail naming its operation 2", func() bool {
		return lastError("KUBERNETES_PATCH_PATH: operation 2 (MergePatch ConfigMap " + ns + "/missing)")
	})
	data("before-bad")
	e.eventually("cap.sh to fail on the cap", func() bool {
		return lastError("hook cap.sh: KUBERNETES_PATCH_PATH: too many operations: more than 1000")
	})
	if _, err := get("cap-0"); err == nil {
		t.Fatal("cap.sh: an operation of a file over the cap was applied")
	}
	e.eventually("failed.sh's status patch", func() bool { return status("t2") == "Failed" })
	// only status patches are applied after a failure
	eq("fail-cm", map[string]string{"keep": "1"})
}
