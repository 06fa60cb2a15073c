package kube

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

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
			m := &Monitor{
				spec:    MonitorSpec{JqFilter: compile(b, ".metadata.labels"), KeepFullObjects: false},
				gvr:     schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
				kind:    "ConfigMap",
				handler: func(ObjectEvent) { events.Add(1) },
				objects: map[string]*entry{}, sources: map[string]*source{},
			}
			s := &source{m: m, synced: make(chan struct{})}
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
	w, err := NewWatcher(restCfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
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
