package kube

import (
	"context"
	"fmt"
	"net/url"
	"reflect"
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

func TestMonitorSelectsAndFilters(t *testing.T) {
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
	r.wait(t, 3)
	time.Sleep(300 * time.Millisecond) // anything reported late would show now
	got := r.wait(t, 3)
	want := []struct{ typ, name, result string }{{Modified, "a", "2"}, {Added, "c", "3"}, {Deleted, "a", "2"}}
	if len(got) != len(want) {
		t.Fatalf("events = %+v (an unrelated update or an unselected object was reported)", got)
	}
	for i, w := range want {
		if got[i].Type != w.typ || got[i].Name != w.name || got[i].FilterResult != w.result || got[i].Object == nil {
			t.Fatalf("event %d = %+v, want %+v", i, got[i], w)
		}
	}
	if snap := m.Snapshot(); len(snap) != 1 || snap[0].Name != "c" {
		t.Fatalf("snapshot after = %+v", snap)
	}
}

func TestMonitorV0KindAndEvents(t *testing.T) {
	ns, other := namespace(t), namespace(t)
	r := &recorder{}
	m := monitor(t, MonitorSpec{APIVersion: "v1", Kind: "secret", Namespaces: []string{ns}, Events: []string{Deleted}, KeepFullObjects: true}, r)
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
	r.wait(t, 1)
	time.Sleep(300 * time.Millisecond) // anything reported late would show now
	got := r.wait(t, 1)
	if len(got) != 1 || got[0].Type != Deleted || got[0].Namespace != ns {
		t.Fatalf("events = %+v; want one Deleted in %s", got, ns)
	}
}

func TestMonitorUnknownKind(t *testing.T) {
	_, err := newWatcher(t).NewMonitor(MonitorSpec{APIVersion: "v1", Kind: "Unicorn"}, func(ObjectEvent) {})
	if err == nil {
		t.Fatal("an unknown kind was accepted")
	}
}

// A re-list (after a watch expired or the API server came back) reports
// only what changed while the watch was down.
func TestMonitorRelistReportsTheDifference(t *testing.T) {
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

// A namespace label selector follows namespaces that gain or lose the label.
func TestMonitorNamespaceLabelSelector(t *testing.T) {
	label := fmt.Sprintf("monitor-test-%d", nsSeq.Add(1))
	in, out := namespace(t), namespace(t)
	setLabel := func(ns, value string) {
		t.Helper()
		n, err := client.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Labels = map[string]string{label: value}
		if _, err := client.CoreV1().Namespaces().Update(t.Context(), n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setLabel(in, "yes")
	configMap(t, in, "a", nil, nil)
	configMap(t, out, "b", nil, nil)
	r := &recorder{}
	m := monitor(t, MonitorSpec{APIVersion: "v1", Kind: "ConfigMap",
		NamespaceLabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{label: "yes"}}}, r)
	snap := m.Snapshot()
	if len(snap) != 1 || snap[0].Namespace != in || snap[0].Name != "a" {
		t.Fatalf("snapshot = %+v; want only the objects of %s", snap, in)
	}
	setLabel(out, "yes")
	setLabel(in, "no")
	got := r.wait(t, 2)
	var seen []string
	for _, ev := range got {
		seen = append(seen, ev.Type+" "+ev.Namespace+"/"+ev.Name)
	}
	slices.Sort(seen)
	want := []string{"Added " + out + "/b", "Deleted " + in + "/a"}
	if !slices.Equal(seen, want) {
		t.Fatalf("events = %v, want %v", seen, want)
	}
}

// A selector the API server refuses fails Start with its answer, at once.
func TestMonitorRefusedSelector(t *testing.T) {
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
	if got := r.wait(t, 1); got[0].Type != Added || got[0].Name != "w1" {
		t.Fatalf("events = %+v", got)
	}
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

// Bindings on one kind, namespace and selectors share one watch; each gets
// its own filter results, events and snapshot.
func TestMonitorsShareOneWatch(t *testing.T) {
	ns := namespace(t)
	configMap(t, ns, "a", map[string]string{"app": "x"}, map[string]string{"v": "1", "w": "1"})
	w, watches := newCountingWatcher(t)
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	rv, rw := &recorder{}, &recorder{}
	mv := startMonitor(t, w, MonitorSpec{Name: "v", APIVersion: "v1", Kind: "ConfigMap", Namespaces: []string{ns}, LabelSelector: sel, JqFilter: compile(t, ".data.v")}, rv)
	mw := startMonitor(t, w, MonitorSpec{Name: "w", APIVersion: "v1", Kind: "ConfigMap", Namespaces: []string{ns}, LabelSelector: sel, JqFilter: compile(t, ".data.w")}, rw)
	if n := watches.Opened("/namespaces/" + ns + "/configmaps"); n != 1 {
		t.Fatalf("%d watch requests for two bindings on the same objects, want 1", n)
	}
	cms := client.CoreV1().ConfigMaps(ns)
	a, err := cms.Get(t.Context(), "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.Data["v"] = "2" // only v's filter result changes
	if _, err := cms.Update(t.Context(), a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	configMap(t, ns, "b", map[string]string{"app": "x"}, map[string]string{"v": "3", "w": "3"})
	configMap(t, ns, "c", map[string]string{"app": "y"}, map[string]string{"v": "4", "w": "4"})
	if err := cms.Delete(t.Context(), "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rv.wait(t, 3)
	rw.wait(t, 2)
	time.Sleep(300 * time.Millisecond) // anything reported late would show now
	if got, want := summary(rv.wait(t, 3)), []string{"Modified a=2", "Added b=3", "Deleted b=3"}; !slices.Equal(got, want) {
		t.Fatalf("v's events = %v, want %v", got, want)
	}
	if got, want := summary(rw.wait(t, 2)), []string{"Added b=3", "Deleted b=3"}; !slices.Equal(got, want) {
		t.Fatalf("w's events = %v, want %v", got, want)
	}
	for _, tc := range []struct {
		m    *Monitor
		want []string
	}{{mv, []string{"a=2"}}, {mw, []string{"a=1"}}} {
		if got := summary(tc.m.Snapshot()); !slices.Equal(got, tc.want) {
			t.Fatalf("snapshot = %v, want %v", got, tc.want)
		}
	}
	if n := watches.Opened("/namespaces/" + ns + "/configmaps"); n != 1 {
		t.Fatalf("%d watch requests, want 1", n)
	}
	infos := w.Watches()
	if len(infos) != 1 {
		t.Fatalf("Watches = %+v, want one", infos)
	}
	want := WatchInfo{APIVersion: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespace: ns, LabelSelector: "app=x",
		Objects: 1, Synced: true, Bindings: []string{"v", "w"}}
	if got := infos[0]; !reflect.DeepEqual(got, want) {
		t.Fatalf("Watches = %+v, want %+v", got, want)
	}
}

// Bindings that differ in namespace, label selector or field selector
// open watches of their own.
func TestMonitorsWithOtherSelectorsWatchApart(t *testing.T) {
	ns, other := namespace(t), namespace(t)
	w, watches := newCountingWatcher(t)
	base := MonitorSpec{APIVersion: "v1", Kind: "ConfigMap", Namespaces: []string{ns}}
	specs := []MonitorSpec{base, base, base, base}
	specs[1].Namespaces = []string{other}
	specs[2].LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	specs[3].FieldSelector = "metadata.name=a"
	for _, spec := range specs {
		startMonitor(t, w, spec, &recorder{})
	}
	if n := watches.Opened("/namespaces/"+ns+"/configmaps", "watch=true"); n != 3 {
		t.Fatalf("%d watch requests in %s, want 3 (no selector, a label selector, a field selector)", n, ns)
	}
	if n := watches.Opened("/namespaces/" + other + "/configmaps"); n != 1 {
		t.Fatalf("%d watch requests in %s, want 1", n, other)
	}
	if infos := w.Watches(); len(infos) != 4 {
		t.Fatalf("Watches = %+v, want 4", infos)
	}
}

// A shared watch stays while a binding uses it and stops (its request
// ends) with the last one.
func TestSharedWatchStopsWithItsLastMonitor(t *testing.T) {
	ns := namespace(t)
	w, watches := newCountingWatcher(t)
	spec := MonitorSpec{APIVersion: "v1", Kind: "ConfigMap", Namespaces: []string{ns}}
	first, second := &recorder{}, &recorder{}
	m1 := startMonitor(t, w, spec, first)
	m2 := startMonitor(t, w, spec, second)
	path := "/namespaces/" + ns + "/configmaps"
	if watches.Open(path) != 1 {
		t.Fatalf("%d open watches, want 1", watches.Open(path))
	}
	m1.Stop()
	time.Sleep(300 * time.Millisecond) // a watch that closed would show now
	if watches.Open(path) != 1 || len(w.Watches()) != 1 {
		t.Fatalf("the watch closed (%d open, %d listed) while a binding still uses it", watches.Open(path), len(w.Watches()))
	}
	configMap(t, ns, "a", nil, nil)
	if got := second.wait(t, 1); got[0].Type != Added || got[0].Name != "a" {
		t.Fatalf("events of the binding left = %+v", got)
	}
	if got := first.wait(t, 0); len(got) != 0 {
		t.Fatalf("a stopped binding got events: %+v", got)
	}
	m2.Stop()
	eventually(t, "the watch request ends", func() bool { return watches.Open(path) == 0 })
	if infos := w.Watches(); len(infos) != 0 {
		t.Fatalf("Watches = %+v after the last binding stopped", infos)
	}
	// a binding after that opens it again
	startMonitor(t, w, spec, &recorder{})
	if watches.Opened(path) != 2 || watches.Open(path) != 1 {
		t.Fatalf("%d watch requests, %d open; want 2 and 1", watches.Opened(path), watches.Open(path))
	}
}

// A binding that joins a synced watch gets the current objects in its
// first snapshot (its Synchronization) and is told only what happens
// after it joined; one that keeps whole objects gets them whole.
func TestMonitorJoinsASyncedWatch(t *testing.T) {
	ns := namespace(t)
	configMap(t, ns, "a", nil, map[string]string{"v": "1"})
	w, watches := newCountingWatcher(t)
	early := &recorder{}
	startMonitor(t, w, MonitorSpec{APIVersion: "v1", Kind: "ConfigMap", Namespaces: []string{ns}, JqFilter: compile(t, ".data.v")}, early)
	configMap(t, ns, "b", nil, map[string]string{"v": "2"})
	early.wait(t, 1)
	existing := []string{"a=1!", "b=2!"}
	for _, keep := range []bool{false, true} {
		late := &recorder{}
		m := startMonitor(t, w, MonitorSpec{APIVersion: "v1", Kind: "ConfigMap", Namespaces: []string{ns},
			JqFilter: compile(t, `.data.v + "!"`), KeepFullObjects: keep}, late)
		snap := m.Snapshot()
		if got, want := summary(snap), existing; !slices.Equal(got, want) {
			t.Fatalf("keepFull %v: first snapshot = %v, want %v", keep, got, want)
		}
		for _, ev := range snap {
			if keep && (ev.Object == nil || ev.Object["data"].(map[string]any)["v"] == nil) {
				t.Fatalf("keepFull: snapshot without the object: %+v", ev)
			}
			if !keep && ev.Object != nil {
				t.Fatalf("filter only: snapshot with the object: %+v", ev)
			}
		}
		name := fmt.Sprintf("c%v", keep)
		configMap(t, ns, name, nil, map[string]string{"v": "3"})
		time.Sleep(300 * time.Millisecond) // anything reported late would show now
		if got, want := summary(late.wait(t, 1)), []string{"Added " + name + "=3!"}; !slices.Equal(got, want) {
			t.Fatalf("keepFull %v: events of the late binding = %v, want %v", keep, got, want)
		}
		existing = append(existing, name+"=3!")
	}
	if n := watches.Opened("/namespaces/" + ns + "/configmaps"); n != 1 {
		t.Fatalf("%d watch requests, want 1", n)
	}
}

// Bindings with a namespace label selector share the watch of namespaces
// and, with bindings that name the namespace, the watch of its objects.
func TestNamespaceSelectorsShareWatches(t *testing.T) {
	label := fmt.Sprintf("monitor-test-%d", nsSeq.Add(1))
	ns := namespace(t)
	n, err := client.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels = map[string]string{label: "yes"}
	if _, err := client.CoreV1().Namespaces().Update(t.Context(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	configMap(t, ns, "a", nil, nil)
	w, watches := newCountingWatcher(t)
	bySelector := MonitorSpec{APIVersion: "v1", Kind: "ConfigMap", NamespaceLabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{label: "yes"}}}
	byName := MonitorSpec{APIVersion: "v1", Kind: "ConfigMap", Namespaces: []string{ns}}
	var ms []*Monitor
	for _, spec := range []MonitorSpec{bySelector, bySelector, byName} {
		ms = append(ms, startMonitor(t, w, spec, &recorder{}))
	}
	for _, m := range ms {
		if got := summary(m.Snapshot()); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("snapshot = %v", got)
		}
	}
	if got := watches.Opened("/api/v1/namespaces?", url.QueryEscape(label)); got != 1 {
		t.Fatalf("%d watches of namespaces, want 1", got)
	}
	if got := watches.Opened("/namespaces/" + ns + "/configmaps"); got != 1 {
		t.Fatalf("%d watches of the namespace's ConfigMaps, want 1", got)
	}
}

// Bindings that start together, before the watch's first list, all get it
// as their Synchronization.
func TestMonitorsStartingTogether(t *testing.T) {
	ns := namespace(t)
	for i := range 20 {
		configMap(t, ns, fmt.Sprintf("cm-%02d", i), nil, map[string]string{"v": fmt.Sprint(i)})
	}
	w, watches := newCountingWatcher(t)
	ms := make([]*Monitor, 10)
	var wg sync.WaitGroup
	for i := range ms {
		m, err := w.NewMonitor(MonitorSpec{APIVersion: "v1", Kind: "ConfigMap", Namespaces: []string{ns},
			JqFilter: compile(t, fmt.Sprintf(".data.v + %q", fmt.Sprint("/", i%3))), KeepFullObjects: i%2 == 0}, func(ObjectEvent) {})
		if err != nil {
			t.Fatal(err)
		}
		ms[i] = m
		t.Cleanup(m.Stop)
		wg.Go(func() {
			if err := m.Start(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i, m := range ms {
		snap := m.Snapshot()
		if len(snap) != 20 {
			t.Fatalf("monitor %d sees %d objects, want 20", i, len(snap))
		}
		for j, ev := range snap {
			if want := fmt.Sprint(j, "/", i%3); ev.FilterResult != want || (ev.Object != nil) != (i%2 == 0) {
				t.Fatalf("monitor %d: object %d = %+v, want filter result %s", i, j, ev, want)
			}
		}
	}
	if n := watches.Opened("/namespaces/" + ns + "/configmaps"); n != 1 {
		t.Fatalf("%d watch requests, want 1", n)
	}
}

// A handler may read snapshots of the bindings on its watch: the store is
// not locked while bindings are told.
func TestHandlerReadsSnapshots(t *testing.T) {
	ns := namespace(t)
	w := newWatcher(t)
	spec := MonitorSpec{APIVersion: "v1", Kind: "ConfigMap", Namespaces: []string{ns}}
	other := startMonitor(t, w, spec, &recorder{})
	seen := make(chan []string, 10)
	var self *Monitor
	var ready sync.WaitGroup
	ready.Add(1)
	m, err := w.NewMonitor(spec, func(ObjectEvent) {
		ready.Wait()
		seen <- append(summary(self.Snapshot()), summary(other.Snapshot())...)
	})
	if err != nil {
		t.Fatal(err)
	}
	self = m
	ready.Done()
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	configMap(t, ns, "a", nil, nil)
	select {
	case got := <-seen:
		if !slices.Equal(got, []string{"a", "a"}) {
			t.Fatalf("snapshots in the handler = %v, want a in both", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the handler did not return: reading a snapshot blocks while bindings are told")
	}
}

// Without a jqFilter, the snapshot has whole objects only when the binding
// keeps them; events carry the object either way.
func TestMonitorKeepsObjectsOnlyWhenAsked(t *testing.T) {
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprint("keepFull=", keep), func(t *testing.T) {
			ns := namespace(t)
			configMap(t, ns, "a", nil, nil)
			r := &recorder{}
			m := monitor(t, MonitorSpec{APIVersion: "v1", Kind: "ConfigMap", Namespaces: []string{ns}, KeepFullObjects: keep}, r)
			if snap := m.Snapshot(); len(snap) != 1 || (snap[0].Object != nil) != keep || snap[0].FilterResult != nil {
				t.Fatalf("snapshot = %+v", snap)
			}
			configMap(t, ns, "b", nil, nil)
			if got := r.wait(t, 1); got[0].Object == nil || got[0].Name != "b" {
				t.Fatalf("event = %+v, want b with its object", got[0])
			}
		})
	}
}
