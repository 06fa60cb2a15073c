package kube

import (
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/addonops/addon-operator/loader"
)

func testMember(t *testing.T, filter string, keep bool) *member {
	return &member{name: filter, jq: compile(t, filter), keep: keep, on: func(change) {}, onError: func(error) {}, ready: make(chan error, 1)}
}

// The store holds each object once: as JSON while no member keeps whole
// objects, decoded (the one map every keeping member's snapshot shares)
// while one does; members with equal filter results share the value.
func TestSharedStoreHoldsObjectsOnce(t *testing.T) {
	t.Parallel()
	sw := newSharedWatch(watchKey{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}}, "ConfigMap", slog.Default())
	a, b := testMember(t, ".metadata.labels", false), testMember(t, ".metadata.labels", false)
	sw.join(a)
	sw.join(b)
	obj := benchObject(1, 1)
	obj.Object["spec"] = map[string]any{"replicas": int64(3)}
	if err := sw.Replace([]any{obj}, ""); err != nil {
		t.Fatal(err)
	}
	rec := sw.records["bench/cm-0001"]
	body := func() string { return reflect.TypeOf(rec.body).String() }
	if body() != "[]uint8" || len(rec.results) != 1 {
		t.Fatalf("filters only: body %s, %d results; want JSON and one shared result", body(), len(rec.results))
	}
	own := testMember(t, ".metadata.name", false)
	keep := testMember(t, ".metadata.labels", true)
	sw.join(own)
	sw.join(keep)
	if body() != "map[string]interface {}" || len(rec.results) != 2 {
		t.Fatalf("with a keeping member: body %s, %d results; want the object and two results", body(), len(rec.results))
	}
	snap := sw.snapshot(keep)
	if len(snap) != 1 || reflect.ValueOf(snap[0].Object).UnsafePointer() != reflect.ValueOf(rec.body).UnsafePointer() {
		t.Fatalf("the keeping member's snapshot is not the store's object: %+v", snap)
	}
	if r := snap[0].Object["spec"].(map[string]any)["replicas"]; r != int64(3) {
		t.Fatalf("decoded replicas = %#v, want int64(3) as the API server's objects have", r)
	}
	if s := sw.snapshot(a); len(s) != 1 || s[0].Object != nil || s[0].FilterResult == nil {
		t.Fatalf("a filtering member's snapshot = %+v", s)
	}
	sw.leave(keep, false)
	sw.leave(own, false)
	if body() != "[]uint8" || len(rec.results) != 1 {
		t.Fatalf("after they left: body %s, %d results; want JSON and one result", body(), len(rec.results))
	}
	sw.leave(a, false)
	if got, ok := rec.get(b.slot); !ok || got == nil {
		t.Fatalf("the result of the member that stays is gone: %v", got)
	}
}

// Bindings on one kind, namespace and selectors share one watch; each gets
// its own filter results, events and snapshot.
func TestMonitorsShareOneWatch(t *testing.T) {
	t.Parallel()
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
	// a marker both select: anything reported late comes before it
	configMap(t, ns, "z", map[string]string{"app": "x"}, map[string]string{"v": "9", "w": "9"})
	if got, want := summary(rv.waitFor(t, "z")), []string{"Modified a=2", "Added b=3", "Deleted b=3", "Added z=9"}; !slices.Equal(got, want) {
		t.Fatalf("v's events = %v, want %v", got, want)
	}
	if got, want := summary(rw.waitFor(t, "z")), []string{"Added b=3", "Deleted b=3", "Added z=9"}; !slices.Equal(got, want) {
		t.Fatalf("w's events = %v, want %v", got, want)
	}
	for _, tc := range []struct {
		m    *Monitor
		want []string
	}{{mv, []string{"a=2", "z=9"}}, {mw, []string{"a=1", "z=9"}}} {
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
		Objects: 2, Synced: true, Bindings: []string{"v", "w"}}
	if got := infos[0]; !reflect.DeepEqual(got, want) {
		t.Fatalf("Watches = %+v, want %+v", got, want)
	}
}

// Bindings that differ in namespace, label selector or field selector
// open watches of their own.
func TestMonitorsWithOtherSelectorsWatchApart(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	// Stop closes a watch it was the last holder of before it returns:
	// the watch is still listed, and still tells the binding left
	if len(w.Watches()) != 1 {
		t.Fatalf("the watch is not listed (%d) while a binding still uses it", len(w.Watches()))
	}
	configMap(t, ns, "a", nil, nil)
	if got := second.wait(t, 1); got[0].Type != loader.EventAdded || got[0].Name != "a" {
		t.Fatalf("events of the binding left = %+v", got)
	}
	if watches.Open(path) != 1 || watches.Opened(path) != 1 {
		t.Fatalf("%d watches open, %d opened, while a binding still uses the first", watches.Open(path), watches.Opened(path))
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
	t.Parallel()
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
		name, marker := fmt.Sprintf("c%v", keep), fmt.Sprintf("z%v", keep)
		configMap(t, ns, name, nil, map[string]string{"v": "3"})
		// anything reported late comes before the marker
		configMap(t, ns, marker, nil, map[string]string{"v": "9"})
		if got, want := summary(late.waitFor(t, marker)), []string{"Added " + name + "=3!", "Added " + marker + "=9!"}; !slices.Equal(got, want) {
			t.Fatalf("keepFull %v: events of the late binding = %v, want %v", keep, got, want)
		}
		existing = append(existing, name+"=3!", marker+"=9!")
		slices.Sort(existing)
	}
	if n := watches.Opened("/namespaces/" + ns + "/configmaps"); n != 1 {
		t.Fatalf("%d watch requests, want 1", n)
	}
}

// Bindings that start together, before the watch's first list, all get it
// as their Synchronization.
func TestMonitorsStartingTogether(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
