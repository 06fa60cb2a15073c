package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/internal/benchtree"
)

// BenchmarkConverge runs the real binary on the reference tree of
// gen-modules.sh against the local control plane and reports: start to
// /readyz, peak RSS, and a no-change re-converge (an unused global key
// touched in the ConfigMap) with the Helm upgrades it caused; each as a
// ratio to the hook floor of the same run too (hookFloor: the tree's hooks
// run directly, one after another, before the operator starts and after
// the re-converge, averaged). "weights=10" gives ten modules each weight
// (gen-modules.sh --weights 10), which run at once. It logs each module
// run step's milliseconds per module (addon_operator_module_run_step_seconds).
// With ADDON_OPERATOR_BENCH_PROFILE=dir it writes a CPU profile and an
// execution trace of the converge and of the re-converge there
// (docs/performance.md). Run with -benchtime=1x; each iteration is a fresh
// namespace and process.
func BenchmarkConverge(b *testing.B) {
	for _, c := range []struct {
		n, perWeight int
	}{{10, 1}, {50, 1}, {100, 1}, {100, 10}, {1000, 1}, {1000, 10}} {
		name := fmt.Sprintf("N=%d", c.n)
		if c.perWeight > 1 {
			name += fmt.Sprintf(",weights=%d", c.perWeight)
		}
		b.Run(name, func(b *testing.B) {
			tree := b.TempDir()
			var args []string
			if c.perWeight > 1 {
				args = []string{"--weights", fmt.Sprint(c.perWeight)}
			}
			if err := benchtree.Generate(c.n, tree, args...); err != nil {
				b.Skip(err)
			}
			for range b.N {
				floor := hookFloor(b, tree)
				r := convergeOnce(b, tree, namespace(b, fmt.Sprintf("bench-%d-%d", c.n, c.perWeight)), c.n)
				floor = (floor + hookFloor(b, tree)) / 2
				b.ReportMetric(r.converge.Seconds(), "converge-s")
				b.ReportMetric(r.reconverge.Seconds(), "reconverge-s")
				b.ReportMetric(floor.Seconds(), "floor-s")
				b.ReportMetric(r.converge.Seconds()/floor.Seconds(), "converge/floor")
				b.ReportMetric(r.reconverge.Seconds()/floor.Seconds(), "reconverge/floor")
				b.ReportMetric(r.reupgrades, "reconverge-upgrades")
				b.ReportMetric(r.upgrades, "upgrades")
				b.ReportMetric(float64(r.peakRSS)/(1<<20), "peak-RSS-MiB")
				b.ReportMetric(float64(r.peakAnon)/(1<<20), "peak-anon-MiB")
				b.ReportMetric(r.hookMS, "hook-ms/run")
				b.ReportMetric(r.reHooks, "reconverge-in-hooks-s")
				b.ReportMetric(r.reHelm, "reconverge-in-helm-s")
				b.ReportMetric(r.helmMS, "helm-ms/module")
				b.ReportMetric(r.reRequests, "reconverge-api-requests")
				b.ReportMetric(r.requests, "converge-api-requests")
				b.ReportMetric(r.firstRelease.Seconds(), "first-release-s")
			}
		})
	}
}

type convergeResult struct {
	converge, reconverge time.Duration
	upgrades, reupgrades float64
	hookMS, helmMS       float64
	// seconds of the re-converge spent in hook runs and in Helm steps
	reHooks, reHelm float64
	// API requests the operator made during the re-converge (its Helm
	// client's and its own; the benchmark's scrapes are not requests)
	reRequests float64
	// API requests from the start to the end of the first converge
	requests float64
	peakRSS  int64
	// peakAnon is the most RssAnon seen, sampled every 50 ms: the
	// process's own memory, without the binary's pages in peakRSS
	peakAnon int64
	// firstRelease: from the process's start to its first release applied
	// (start-up, the global hooks and one module run)
	firstRelease time.Duration
}

const (
	hookSum, hookCount = "addon_operator_hook_run_seconds_sum", "addon_operator_hook_run_seconds_count"
	helmSum, helmCount = "addon_operator_helm_seconds_sum", "addon_operator_helm_seconds_count"
	helmUpgrades       = "addon_operator_helm_upgrades"
	apiRequests        = "addon_operator_kubernetes_client_request_result_total"
)

// convergeOnce measures one converge and re-converge; each of onPhase is
// told "converged" after the first and "reconverged" after the second,
// before their figures are read and outside the timings.
func convergeOnce(b *testing.B, tree, ns string, modules int, onPhase ...func(phase string)) convergeResult {
	start := time.Now()
	op := startOperator(b, "ADDON_OPERATOR_NAMESPACE="+ns, "MODULES_DIR="+filepath.Join(tree, "modules"),
		"GLOBAL_HOOKS_DIR="+filepath.Join(tree, "global-hooks"), "LOG_LEVEL=info", "LOG_TYPE=json",
		fmt.Sprintf("ADDON_OPERATOR_PPROF=%t", profileDir() != ""))
	defer op.stop(10 * time.Second)
	var res convergeResult
	anon := sampleAnon(op.cmd.Process.Pid)
	defer anon() // stops the sampler on every way out
	prof := startProfile(b, op.addr, fmt.Sprintf("converge-%d", modules))
	poll(b, "the first converge", func() bool { return convergedCount(b, op.log) > 0 })
	res.converge = time.Since(start)
	res.firstRelease = firstRelease(b, op.log).Sub(start)
	prof.wait()
	for _, f := range onPhase {
		f("converged")
	}
	if code, _ := get(op.addr, "/readyz"); code != http.StatusOK {
		b.Fatalf("/readyz after the first converge: %d", code)
	}
	text := metricsText(b, op.addr)
	before, mfs := sumsByName(text), families(b, text)
	res.hookMS = 1000 * before[hookSum] / before[hookCount]
	res.helmMS = 1000 * before[helmSum] / before[helmCount]
	res.upgrades = before[helmUpgrades]
	steps, reqs := stepSums(mfs), requestsByResource(mfs)
	logSteps(b, "converge", nil, steps, modules)
	logRequests(b, "converge", nil, reqs, modules)
	res.requests = before[apiRequests]

	prof = startProfile(b, op.addr, fmt.Sprintf("reconverge-%d", modules))
	t0 := time.Now()
	_, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "addon-operator"},
		Data:       map[string]string{"global": "unusedKey: touched\n"},
	}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	poll(b, "the re-converge", func() bool { return convergedCount(b, op.log) > 1 })
	res.reconverge = time.Since(t0)
	prof.wait()
	for _, f := range onPhase {
		f("reconverged")
	}
	text = metricsText(b, op.addr)
	after, mfs := sumsByName(text), families(b, text)
	logSteps(b, "re-converge", steps, stepSums(mfs), modules)
	logRequests(b, "re-converge", reqs, requestsByResource(mfs), modules)
	res.reupgrades = after[helmUpgrades] - before[helmUpgrades]
	res.reHooks = after[hookSum] - before[hookSum]
	res.reHelm = after[helmSum] - before[helmSum]
	res.reRequests = after[apiRequests] - before[apiRequests]
	res.peakRSS = peakRSS(op.cmd.Process.Pid)
	res.peakAnon = anon()
	if dir := profileDir(); dir != "" {
		// the live heap after both, for what a module costs in memory
		if resp, err := http.Get("http://" + op.addr + "/debug/pprof/heap?gc=1"); err == nil {
			if data, err := io.ReadAll(resp.Body); err == nil {
				_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("reconverged-%d.heap.pprof", modules)), data, 0o644)
			}
			resp.Body.Close()
		}
		// its mappings' resident pages: the executable's text, read-only
		// data and tables apart from its own memory
		if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", op.cmd.Process.Pid)); err == nil {
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("reconverged-%d.smaps", modules)), data, 0o644)
		}
		// the operator's log beside its profiles: start-up's steps by time
		if data, err := os.ReadFile(op.log); err == nil {
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("converge-%d.log", modules)), data, 0o644)
		}
	}
	return res
}

// poll checks cond every 10 ms.
func poll(b *testing.B, what string, cond func() bool) {
	deadline := time.Now().Add(5 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// convergedCount counts the operator's "converged" log lines. Reading its
// log file costs the operator nothing, where polling an endpoint does:
// serving /metrics (100 modules' histograms) every 5 ms took two thirds of
// its CPU during a re-converge, and on these two cores any work beside a
// hook slows the hook.
func convergedCount(b *testing.B, path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return bytes.Count(data, []byte(`"msg":"converged"`))
}

// plain asks for uncompressed responses: gzip was most of a scrape's cost.
var plain = &http.Client{Transport: &http.Transport{DisableCompression: true}}

// scrape reads /metrics once and sums every series of each metric by name.
func scrape(t testing.TB, addr string) map[string]float64 {
	return sumsByName(metricsText(t, addr))
}

// metricsText is one reading of /metrics.
func metricsText(t testing.TB, addr string) string {
	resp, err := plain.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// sumsByName sums every series of each metric in a reading of /metrics by
// its name as served (a histogram's _sum and _count apart).
func sumsByName(text string) map[string]float64 {
	sums := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		name, _, _ = strings.Cut(name, "{")
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sums[name] += v
		}
	}
	return sums
}

// peakRSS is VmHWM of a process, in bytes.
func peakRSS(pid int) int64 { return procStatus(pid, "VmHWM:") }

// procStatus is one kB figure of /proc/PID/status, in bytes.
func procStatus(pid int, key string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, key) {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// sampleAnon reads the process's RssAnon every 50 ms until the returned
// func is called, which returns the most seen. The kernel keeps a peak of
// the whole RSS only (VmHWM), which counts the pages of the executable a
// run touched: two thirds of it for this binary (docs/performance.md).
func sampleAnon(pid int) func() int64 {
	var peak atomic.Int64
	done := make(chan struct{})
	var once sync.Once
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if v := procStatus(pid, "RssAnon:"); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		once.Do(func() { close(done) })
		<-stopped
		return peak.Load()
	}
}

// firstRelease is the time of the first "helm release applied" line of
// the operator's JSON log.
func firstRelease(b *testing.B, path string) time.Time {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		var l logLine
		if json.Unmarshal(line, &l) == nil && l.Msg == "helm release applied" {
			return l.Time
		}
	}
	return time.Time{}
}
