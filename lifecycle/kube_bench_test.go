package lifecycle

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkKubernetesEvents drives 1000 label updates of 1000 watched
// ConfigMaps through the real API server into a hook binding with a
// jqFilter (in a named queue), and reports: the API server's write rate
// (the ceiling here), the rate at which the events reached the queue (the
// hook excluded), and the rate at which they went through the hook (its
// fork/exec included; compaction folds bursts into fewer runs).
// One measurement per call: run it with -benchtime 1x.
func BenchmarkKubernetesEvents(b *testing.B) {
	const n = 1000
	id := fmt.Sprintf("bench-%d", time.Now().UnixNano()%1e9)
	cfg := fmt.Sprintf(`{"configVersion":"v1","kubernetes":[{"name":"cms","apiVersion":"v1","kind":"ConfigMap","queue":"bench","executeHookOnSynchronization":false,"keepFullObjectsInMemory":false,"labelSelector":{"matchLabels":{"run":"%s"}},"jqFilter":".metadata.labels"}]}`, id)
	hook := fmt.Sprintf(`#!/bin/sh
if [ "$1" = "--config" ]; then echo '%s'; exit 0; fi
# one line per run: how many events it carried (the file is the count)
grep -o '"watchEvent"' "$BINDING_CONTEXT_PATH" | wc -l >> "$RECORD_FILE"
`, cfg)
	e := setup(b, map[string]string{"modules/values.yaml": "global: {}\n", "global-hooks/bench.sh": hook}, nil)
	each := func(f func(i int) error) {
		var g errgroup.Group
		g.SetLimit(8)
		for i := range n {
			g.Go(func() error { return f(i) })
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	cms := client.CoreV1().ConfigMaps(e.ns)
	each(func(i int) error {
		_, err := cms.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("cm-%04d", i), Labels: map[string]string{"run": id, "gen": "0"}},
			Data: map[string]string{"payload": strings.Repeat("x", 800)}}, metav1.CreateOptions{})
		return err
	})
	e.start()
	e.waitReady()

	queued := func() float64 {
		return testutil.ToFloat64(e.op.metrics.KubeEvents.WithLabelValues("bench.sh", "cms"))
	}
	handled := func() (events, runs int) {
		data, _ := os.ReadFile(e.records)
		for _, line := range strings.Fields(string(data)) {
			k, _ := strconv.Atoi(line)
			events += k
			runs++
		}
		return events, runs
	}
	start := time.Now()
	each(func(i int) error {
		_, err := cms.Patch(context.Background(), fmt.Sprintf("cm-%04d", i), "application/merge-patch+json",
			[]byte(`{"metadata":{"labels":{"gen":"1"}}}`), metav1.PatchOptions{})
		return err
	})
	written := time.Since(start)
	e.eventually("every event queued", func() bool { return queued() >= n })
	inQueue := time.Since(start)
	e.eventually("every event through the hook", func() bool { ev, _ := handled(); return ev >= n })
	throughHook := time.Since(start)
	_, runs := handled()
	b.ReportMetric(n/written.Seconds(), "api-writes/s")
	b.ReportMetric(n/inQueue.Seconds(), "events-queued/s")
	b.ReportMetric(n/throughHook.Seconds(), "events-through-hook/s")
	b.ReportMetric(float64(runs), "hook-runs")
}
