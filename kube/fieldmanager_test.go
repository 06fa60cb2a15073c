package kube

import (
	"context"
	"fmt"
	"testing"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFieldManagers: each writer of this package writes under its own
// field manager (docs/security.md, "Field managers"): Helm's release
// objects and release records, the CRD installer, the ConfigMap writer
// and the Events.
func TestFieldManagers(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx := t.Context()
	managers := func(m []metav1.ManagedFieldsEntry) map[string]bool {
		out := map[string]bool{}
		for _, e := range m {
			out[e.Manager] = true
		}
		return out
	}
	want := func(what string, m []metav1.ManagedFieldsEntry, name string) {
		t.Helper()
		got := managers(m)
		// the API server's own (a CRD's status) may be there too
		delete(got, "kube-apiserver")
		if !got[name] || len(got) != 1 {
			t.Errorf("%s: field managers %v, want only %s (and the API server's)", what, got, name)
		}
	}

	h := newHelm(t, ns)
	if _, err := h.Upgrade(ctx, Release{Name: "demo", ChartDir: testChart(t, goodManifest), Values: map[string]any{"demo": map[string]any{"v": "1"}, "global": map[string]any{}}}); err != nil {
		t.Fatal(err)
	}
	obj, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want("a release's object", obj.ManagedFields, FieldManagerHelm)
	records, err := client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=demo"})
	if err != nil || len(records.Items) == 0 {
		t.Fatalf("release records: %v, %v", records, err)
	}
	want("a release record", records.Items[0].ManagedFields, FieldManagerHelm)

	values := NewConfigMap(client, ns, "addon-operator")
	if _, _, err := values.Update(ctx, func(d map[string]string) (map[string]string, error) { d["global"] = "{}"; return d, nil }); err != nil {
		t.Fatal(err)
	}
	cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "addon-operator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want("the values ConfigMap", cm.ManagedFields, FieldManagerConfigMap)
	if err := values.Warning(ctx, "Test", "field managers"); err != nil {
		t.Fatal(err)
	}
	events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(events.Items) != 1 {
		t.Fatalf("events: %v, %v", events, err)
	}
	want("an Event", events.Items[0].ManagedFields, FieldManagerEvents)

	crds, err := NewCRDs(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	group := fmt.Sprintf("fm%d.example.com", nsSeq.Add(1))
	if _, err := crds.Ensure(ctx, "widgets", moduleWithCRD(t, testCRD(group, "the module's", nil)), nil); err != nil {
		t.Fatal(err)
	}
	ext := apiextensions.NewForConfigOrDie(restCfg).ApiextensionsV1().CustomResourceDefinitions()
	t.Cleanup(func() { _ = ext.Delete(context.Background(), "widgets."+group, metav1.DeleteOptions{}) })
	crd, err := ext.Get(ctx, "widgets."+group, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want("a CRD from crds/", crd.ManagedFields, FieldManagerCRDs)
}
