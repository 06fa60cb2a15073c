package kube

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/itchyny/gojq"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func compile(tb testing.TB, filter string) *gojq.Code {
	tb.Helper()
	q, err := gojq.Parse(filter)
	if err != nil {
		tb.Fatal(err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		tb.Fatal(err)
	}
	return code
}

// benchObject is a ConfigMap of about 1 KiB, as the API server returns it.
func benchObject(i, version int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{
			"name": fmt.Sprintf("cm-%04d", i), "namespace": "bench", "resourceVersion": fmt.Sprint(version),
			"uid":    fmt.Sprintf("00000000-0000-0000-0000-%012d", i),
			"labels": map[string]any{"app": "bench", "generation": fmt.Sprint(version)},
		},
		"data": map[string]any{"payload": strings.Repeat("x", 800)},
	}}
}

// BenchmarkMonitorEvents is the monitor's own cost per event: the jqFilter,
// the store and the change check, over 1000 objects whose filtered labels
// change on every update (every update is reported), or whose unrelated
// data changes (every update is suppressed). The API server and the hook
// are not in it.
func BenchmarkMonitorEvents(b *testing.B) {
	for _, tc := range []struct {
		name     string
		reported bool
	}{{"reported", true}, {"suppressed", false}} {
		b.Run(tc.name, func(b *testing.B) {
			var events atomic.Int64
			gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
			m := &Monitor{
				spec:    MonitorSpec{JqFilter: compile(b, ".metadata.labels"), KeepFullObjects: false},
				gvr:     gvr,
				kind:    "ConfigMap",
				handler: func(ObjectEvent) { events.Add(1) },
			}
			s := newSharedWatch(watchKey{gvr: gvr, namespace: "bench"}, "ConfigMap", slog.Default())
			s.join(m.member())
			list := make([]any, 1000)
			for i := range list {
				list[i] = benchObject(i, 1)
			}
			if err := s.Replace(list, ""); err != nil {
				b.Fatal(err)
			}
			m.synced = true
			updates := make([]*unstructured.Unstructured, 1000)
			for i := range updates {
				updates[i] = benchObject(i, 2)
				if !tc.reported {
					// same labels, other data: the filter result is unchanged
					updates[i].Object["metadata"].(map[string]any)["labels"] = map[string]any{"app": "bench", "generation": "1"}
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				u := updates[i%len(updates)]
				// a new resource version each time, as the API server gives
				u.Object["metadata"].(map[string]any)["resourceVersion"] = fmt.Sprint(i + 10)
				if tc.reported {
					u.Object["metadata"].(map[string]any)["labels"].(map[string]any)["generation"] = fmt.Sprint(i + 10)
				}
				if err := s.Update(u); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
			if tc.reported && events.Load() != int64(b.N) {
				b.Fatalf("reported %d of %d", events.Load(), b.N)
			}
			if !tc.reported && events.Load() != 0 {
				b.Fatalf("reported %d unrelated updates", events.Load())
			}
		})
	}
}

// BenchmarkMonitorMemory is the heap a monitor keeps for 10,000 watched
// ConfigMaps (about 1 KiB each) with keepFullObjectsInMemory true and
// false, measured after a GC above the heap before the monitor started.
// It measures once per call: run it with -benchtime 1x.
func BenchmarkMonitorMemory(b *testing.B) {
	const n = 10000
	ns := benchConfigMaps(b, n)
	w, err := NewWatcher(restCfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	used := map[bool]float64{}
	for _, keep := range []bool{true, false} {
		base := heap()
		m, err := w.NewMonitor(MonitorSpec{APIVersion: "v1", Kind: "ConfigMap", Namespaces: []string{ns},
			JqFilter: compile(b, ".metadata.labels"), KeepFullObjects: keep}, func(ObjectEvent) {})
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		if got := len(m.Snapshot()); got != n {
			b.Fatalf("watching %d objects, want %d", got, n)
		}
		after := heap()
		runtime.KeepAlive(m)
		m.Stop()
		used[keep] = float64(after-base) / (1 << 20)
	}
	b.ReportMetric(used[true], "MiB-keepFull")
	b.ReportMetric(used[false], "MiB-filterOnly")
	b.ReportMetric(100*used[false]/used[true], "%-of-keepFull")
}

// benchConfigMaps creates n ConfigMaps of about 1 KiB in a new namespace.
func benchConfigMaps(b *testing.B, n int) string {
	b.Helper()
	ns := namespace(b)
	var g errgroup.Group
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			_, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i), Labels: map[string]string{"app": "bench", "index": fmt.Sprint(i)}},
				Data:       map[string]string{"payload": strings.Repeat("x", 800)},
			}, metav1.CreateOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	return ns
}

// heap is the live heap after a GC.
func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkMonitorShared is what 100 bindings on one kind, namespace and
// selectors cost next to one: 1000 ConfigMaps of ~1 KiB, every monitor with
// its own compiled jqFilter. "same-filter": every binding has the filter
// `.metadata.labels`; "own-filter": each one's filter gives a result of its
// own. It measures once per call: run it with -benchtime 1x.
func BenchmarkMonitorShared(b *testing.B) {
	const objects = 1000
	ns := benchConfigMaps(b, objects)
	sameFilter := func(int) string { return ".metadata.labels" }
	ownFilter := func(i int) string { return fmt.Sprintf(".metadata.labels + {binding: \"b%d\"}", i) }
	one := measureMonitors(b, ns, objects, 1, false, sameFilter)
	for _, tc := range []struct {
		name     string
		n        int
		parallel bool
		filter   func(int) string
	}{
		{"1", 1, false, sameFilter},
		{"100-same-filter-sequential", 100, false, sameFilter},
		{"100-same-filter-parallel", 100, true, sameFilter},
		{"100-own-filter-sequential", 100, false, ownFilter},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := measureMonitors(b, ns, objects, tc.n, tc.parallel, tc.filter)
			b.ReportMetric(float64(r.watches), "watches")
			b.ReportMetric(r.heapMiB, "MiB-heap")
			b.ReportMetric(r.heapMiB/one.heapMiB, "x-heap-of-1")
			b.ReportMetric(float64(r.sync.Milliseconds()), "ms-to-sync")
		})
	}
}

type monitorsCost struct {
	watches int
	heapMiB float64
	sync    time.Duration
}

// measureMonitors starts n monitors of one Watcher on the ConfigMaps of ns,
// one after the other (as a hook's bindings start) or all at once, and
// measures the watch requests they opened, the heap they keep and the time
// until every one of them synchronized.
func measureMonitors(b *testing.B, ns string, objects, n int, parallel bool, filter func(int) string) monitorsCost {
	b.Helper()
	w, watches := newCountingWatcher(b)
	ms := make([]*Monitor, n)
	for i := range ms {
		m, err := w.NewMonitor(MonitorSpec{APIVersion: "v1", Kind: "ConfigMap", Namespaces: []string{ns},
			JqFilter: compile(b, filter(i))}, func(ObjectEvent) {})
		if err != nil {
			b.Fatal(err)
		}
		ms[i] = m
	}
	base := heap()
	start := time.Now()
	var g errgroup.Group
	if !parallel {
		g.SetLimit(1)
	}
	for _, m := range ms {
		g.Go(func() error { return m.Start(b.Context()) })
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	synced := time.Since(start)
	for _, m := range ms {
		if got := m.Len(); got != objects {
			b.Fatalf("a monitor watches %d objects, want %d", got, objects)
		}
	}
	after := heap()
	runtime.KeepAlive(ms)
	for _, m := range ms {
		m.Stop()
	}
	return monitorsCost{watches: watches.Opened("/namespaces/" + ns + "/"), heapMiB: float64(after-base) / (1 << 20), sync: synced}
}
