package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/itchyny/gojq"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/addonops/addon-operator/loader"
)

type recorder struct {
	mu     sync.Mutex
	events []ObjectEvent
}

func (r *recorder) add(ev ObjectEvent) { r.mu.Lock(); r.events = append(r.events, ev); r.mu.Unlock() }

func (r *recorder) wait(t *testing.T, n int) []ObjectEvent {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r.mu.Lock()
		got := append([]ObjectEvent(nil), r.events...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d events, want %d: %+v", len(got), n, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFor waits until an event of the object name is recorded, and
// returns the events up to it. The watch tells one object's changes in
// the order the API server made them, so a marker object created after
// the changes a test makes stands in for "and nothing more came late".
func (r *recorder) waitFor(t *testing.T, name string) []ObjectEvent {
	t.Helper()
	var got []ObjectEvent
	eventually(t, "an event of "+name, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for i, ev := range r.events {
			if ev.Name == name {
				got = append([]ObjectEvent(nil), r.events[:i+1]...)
				return true
			}
		}
		return false
	})
	return got
}

func newWatcher(t *testing.T) *Watcher {
	t.Helper()
	w, err := NewWatcher(restCfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func monitor(t *testing.T, spec MonitorSpec, r *recorder) *Monitor {
	t.Helper()
	m, err := newWatcher(t).NewMonitor(spec, r.add)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	return m
}

func configMap(t *testing.T, ns, name string, labels map[string]string, data map[string]string) *corev1.ConfigMap {
	t.Helper()
	cm, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: data}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func ptr[T any](v T) *T { return &v }

// eventually waits until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startMonitor starts a monitor of w; it stops at the end of the test.
func startMonitor(t *testing.T, w *Watcher, spec MonitorSpec, r *recorder) *Monitor {
	t.Helper()
	m, err := w.NewMonitor(spec, r.add)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	return m
}

func summary(evs []ObjectEvent) []string {
	var out []string
	for _, ev := range evs {
		s := ev.Type + " " + ev.Name
		if ev.FilterResult != nil {
			s += fmt.Sprint("=", ev.FilterResult)
		}
		out = append(out, strings.TrimSpace(s))
	}
	return out
}

func TestMonitorSelectsAndFilters(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	configMap(t, ns, "a", map[string]string{"app": "x"}, map[string]string{"v": "1"})
	configMap(t, ns, "b", map[string]string{"app": "y"}, map[string]string{"v": "1"})
	q, err := gojq.Parse(".data.v")
	if err != nil {
		t.Fatal(err)
	}
	code, _ := gojq.Compile(q)
	r := &recorder{}
	m := monitor(t, MonitorSpec{APIVersion: "v1", Kind: "ConfigMap", Namespaces: []string{ns},
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}, JqFilter: code}, r)

	// Synchronization: the existing selected objects, filter results only
	snap := m.Snapshot()
	if len(snap) != 1 || snap[0].Name != "a" || snap[0].FilterResult != "1" || snap[0].Object != nil {
		t.Fatalf("snapshot = %+v", snap)
	}
	ctx := context.Background()
	cms := client.CoreV1().ConfigMaps(ns)
	a, _ := cms.Get(ctx, "a", metav1.GetOptions{})
	a.Annotations = map[string]string{"unrelated": "change"}
	a, _ = cms.Update(ctx, a, metav1.UpdateOptions{})
	a.Data["v"] = "2"
	if _, err := cms.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	configMap(t, ns, "c", map[string]string{"app": "x"}, map[string]string{"v": "3"})
	configMap(t, ns, "d", map[string]string{"app": "y"}, nil)
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// a marker the binding selects: the watch tells changes in order, so
	// anything reported late would come before it
	configMap(t, ns, "z", map[string]string{"app": "x"}, map[string]string{"v": "9"})
	got := r.waitFor(t, "z")
	want := []struct{ typ, name, result string }{{loader.EventModified, "a", "2"}, {loader.EventAdded, "c", "3"}, {loader.EventDeleted, "a", "2"}, {loader.EventAdded, "z", "9"}}
	if len(got) != len(want) {
		t.Fatalf("events = %+v (an unrelated update or an unselected object was reported)", got)
	}
	for i, w := range want {
		if got[i].Type != w.typ || got[i].Name != w.name || got[i].FilterResult != w.result || got[i].Object == nil {
			t.Fatalf("event %d = %+v, want %+v", i, got[i], w)
		}
	}
	if snap := m.Snapshot(); len(snap) != 2 || snap[0].Name != "c" || snap[1].Name != "z" {
		t.Fatalf("snapshot after = %+v", snap)
	}
}

func TestMonitorV0KindAndEvents(t *testing.T) {
	t.Parallel()
	ns, other := namespace(t), namespace(t)
	r := &recorder{}
	m := monitor(t, MonitorSpec{APIVersion: "v1", Kind: "secret", Namespaces: []string{ns}, Events: []string{loader.EventDeleted}, KeepFullObjects: true}, r)
	if m.Kind() != "Secret" {
		t.Fatalf("kind = %q", m.Kind())
	}
	ctx := context.Background()
	for _, n := range []string{ns, other} {
		if _, err := client.CoreV1().Secrets(n).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := client.CoreV1().Secrets(n).Delete(ctx, "s", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// a marker deleted after them: anything reported late comes before it
	secrets := client.CoreV1().Secrets(ns)
	if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "z"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := secrets.Delete(ctx, "z", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got := r.waitFor(t, "z")
	if len(got) != 2 || got[0].Type != loader.EventDeleted || got[0].Namespace != ns || got[0].Name != "s" {
		t.Fatalf("events = %+v; want one loader.EventDeleted of s in %s, then the marker's", got, ns)
	}
}

func TestMonitorUnknownKind(t *testing.T) {
	t.Parallel()
	_, err := newWatcher(t).NewMonitor(MonitorSpec{APIVersion: "v1", Kind: "Unicorn"}, func(ObjectEvent) {})
	if err == nil {
		t.Fatal("an unknown kind was accepted")
	}
}

// A re-list (after a watch expired or the API server came back) reports
// only what changed while the watch was down.
func TestMonitorRelistReportsTheDifference(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	same := configMap(t, ns, "same", nil, map[string]string{"v": "1"})
	changed := configMap(t, ns, "changed", nil, map[string]string{"v": "1"})
	configMap(t, ns, "gone", nil, map[string]string{"v": "1"})
	r := &recorder{}
	m := monitor(t, MonitorSpec{APIVersion: "v1", Kind: "ConfigMap", Namespaces: []string{ns}}, r)

	toU := func(cm *corev1.ConfigMap) any {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cm)
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: obj}
	}
	changed = changed.DeepCopy()
	changed.ResourceVersion += "0"
	changed.Data["v"] = "2"
	added := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "added", Namespace: ns, ResourceVersion: "1"}}
	m.mu.Lock()
	src := m.sources[ns]
	m.mu.Unlock()
	if err := src.sw.Replace([]any{toU(same), toU(changed), toU(added)}, ""); err != nil {
		t.Fatal(err)
	}
	got := r.wait(t, 3)
	var seen []string
	for _, ev := range got {
		seen = append(seen, ev.Type+" "+ev.Name)
	}
	want := []string{"Modified changed", "Added added", "Deleted gone"}
	if !slices.Equal(seen, want) {
		t.Fatalf("events after re-list = %v, want %v", seen, want)
	}
}

// A selector the API server refuses fails Start with its answer, at once.
func TestMonitorRefusedSelector(t *testing.T) {
	t.Parallel()
	m, err := newWatcher(t).NewMonitor(MonitorSpec{APIVersion: "v1", Kind: "ConfigMap", FieldSelector: "spec.nothing=x"}, func(ObjectEvent) {})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = m.Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "spec.nothing") {
		t.Fatalf("Start = %v; want the API server's refusal of the field selector", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the refusal took %s", d)
	}
}

// A kind installed after discovery was cached (a new CRD) is found.
func TestMonitorFindsNewCRD(t *testing.T) {
	t.Parallel()
	w := newWatcher(t)
	if _, err := w.NewMonitor(MonitorSpec{APIVersion: "v1", Kind: "ConfigMap"}, func(ObjectEvent) {}); err != nil {
		t.Fatal(err) // discovery is cached now
	}
	group := fmt.Sprintf("t%d.example.com", nsSeq.Add(1))
	crd := &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextv1.NamespaceScoped,
			Names: apiextv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}}}},
		},
	}
	ext := apiextclient.NewForConfigOrDie(restCfg)
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns := namespace(t)
	r := &recorder{}
	var m *Monitor
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		m, err = w.NewMonitor(MonitorSpec{APIVersion: group + "/v1", Kind: "Widget", Namespaces: []string{ns}}, r.add)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new CRD's kind is not found: %v", err)
		}
		time.Sleep(200 * time.Millisecond) // until the API server serves it
	}
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	widget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Widget", "metadata": map[string]any{"name": "w1"}}}
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	if _, err := dynamic.NewForConfigOrDie(restCfg).Resource(gvr).Namespace(ns).Create(t.Context(), widget, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := r.wait(t, 1); got[0].Type != loader.EventAdded || got[0].Name != "w1" {
		t.Fatalf("events = %+v", got)
	}
}
