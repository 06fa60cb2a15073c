package kube

import (
	"fmt"
	"net/url"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A namespace label selector follows namespaces that gain or lose the label.
func TestMonitorNamespaceLabelSelector(t *testing.T) {
	t.Parallel()
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

// Bindings with a namespace label selector share the watch of namespaces
// and, with bindings that name the namespace, the watch of its objects.
func TestNamespaceSelectorsShareWatches(t *testing.T) {
	t.Parallel()
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
