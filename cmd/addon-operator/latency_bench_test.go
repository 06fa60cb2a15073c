package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkLatency measures, with the real binary, how long a change takes
// to reach the cluster: a pushed commit announced by the webhook, and a save
// in a working copy (no-git mode). The module has one ConfigMap and no
// hooks; helm-ms is its own Helm time, from the operator's metrics.
// Run with -benchtime 1x: 5 changes each, median reported.
func BenchmarkLatency(b *testing.B) {
	const rounds = 5
	module := func(v string) map[string]string {
		files := moduleFiles("001-alpha", "alpha", v)
		files["modules/values.yaml"] = "alphaEnabled: true\n"
		return files
	}
	measure := func(b *testing.B, ns string, change func(v string)) time.Duration {
		var d []time.Duration
		for i := range rounds {
			v := fmt.Sprintf("v%d", i)
			start := time.Now()
			change(v)
			eventually(b, "the change", func() bool { return cmValue(ns, "001-alpha-cm") == v })
			d = append(d, time.Since(start))
		}
		slices.Sort(d)
		return d[len(d)/2]
	}
	helmMS := func(b *testing.B, addr string) float64 {
		m := scrape(b, addr)
		return 1000 * m[helmSum] / m[helmCount]
	}

	b.Run("push+webhook", func(b *testing.B) {
		for i := range b.N {
			ns := namespace(b, fmt.Sprintf("latency-git-%d-%d", i, time.Now().UnixNano()%100000))
			root := b.TempDir()
			repo := newRepo(b, root)
			commitFiles(b, repo, "start", module("start"))
			secret := filepath.Join(b.TempDir(), "secret")
			if err := os.WriteFile(secret, []byte("s"), 0o600); err != nil {
				b.Fatal(err)
			}
			addr, _ := operator(b, "ADDON_OPERATOR_NAMESPACE="+ns, "GIT_URL=file://"+repo.Bare, "GIT_REF=main", "GIT_POLL_INTERVAL=1h",
				"GIT_WEBHOOK_SECRET_FILE="+secret, "GIT_CHECKOUT_DIR="+filepath.Join(b.TempDir(), "checkout"), "LOG_LEVEL=warn")
			eventually(b, "first converge", func() bool { return cmValue(ns, "001-alpha-cm") == "start" })
			med := measure(b, ns, func(v string) {
				commitFiles(b, repo, v, module(v))
				postWebhook(b, addr, "s")
			})
			b.ReportMetric(float64(med.Microseconds())/1000, "latency-ms")
			b.ReportMetric(helmMS(b, addr), "helm-ms")
		}
	})
	b.Run("working-copy-save", func(b *testing.B) {
		for i := range b.N {
			ns := namespace(b, fmt.Sprintf("latency-local-%d-%d", i, time.Now().UnixNano()%100000))
			dir := b.TempDir()
			writeFiles(b, dir, module("start"))
			addr, _ := operator(b, "ADDON_OPERATOR_NAMESPACE="+ns, "MODULES_DIR="+filepath.Join(dir, "modules"),
				"GLOBAL_HOOKS_DIR="+filepath.Join(dir, "global-hooks"), "LOG_LEVEL=warn")
			eventually(b, "first converge", func() bool { return cmValue(ns, "001-alpha-cm") == "start" })
			med := measure(b, ns, func(v string) {
				writeFiles(b, dir, map[string]string{"modules/001-alpha/values.yaml": "alpha:\n  v: \"" + v + "\"\n"})
			})
			b.ReportMetric(float64(med.Microseconds())/1000, "latency-ms")
			b.ReportMetric(helmMS(b, addr), "helm-ms")
		}
	})
}
