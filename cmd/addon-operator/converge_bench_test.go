package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/addonops/addon-operator/internal/benchtree"
)

// BenchmarkConverge runs the real binary on the reference tree of
// gen-modules.sh against the local control plane and reports: start to
// /readyz, peak RSS, and a no-change re-converge (an unused global key
// touched in the ConfigMap) with the Helm upgrades it caused. Run with
// -benchtime=1x; each iteration is a fresh namespace and process.
func BenchmarkConverge(b *testing.B) {
	bin := binPath
	for _, n := range []int{10, 50, 100} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			tree := b.TempDir()
			if err := benchtree.Generate(n, tree); err != nil {
				b.Skip(err)
			}
			for i := range b.N {
				ns := fmt.Sprintf("bench-%d-%d-%d", n, i, time.Now().UnixNano()%100000)
				r := convergeOnce(b, client, bin, cp.KubeconfigPath, tree, ns)
				b.ReportMetric(r.converge.Seconds(), "converge-s")
				b.ReportMetric(r.reconverge.Seconds(), "reconverge-s")
				b.ReportMetric(r.reupgrades, "reconverge-upgrades")
				b.ReportMetric(r.upgrades, "upgrades")
				b.ReportMetric(float64(r.peakRSS)/(1<<20), "peak-RSS-MiB")
				b.ReportMetric(r.hookMS, "hook-ms/run")
				b.ReportMetric(r.reHooks, "reconverge-in-hooks-s")
				b.ReportMetric(r.reHelm, "reconverge-in-helm-s")
				b.ReportMetric(r.helmMS, "helm-ms/module")
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
	peakRSS         int64
}

func convergeOnce(b *testing.B, client kubernetes.Interface, bin, kubeconfig, tree, ns string) convergeResult {
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	logPath := filepath.Join(b.TempDir(), "operator.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "start", "--listen-address", addr)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "ADDON_OPERATOR_NAMESPACE="+ns,
		"MODULES_DIR="+filepath.Join(tree, "modules"), "GLOBAL_HOOKS_DIR="+filepath.Join(tree, "global-hooks"), "LOG_LEVEL=info", "LOG_TYPE=json")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	proc, err := startProcess(cmd)
	if err != nil {
		b.Fatal(err)
	}
	defer proc.stop(10 * time.Second)
	var res convergeResult
	poll(b, "the first converge", func() bool { return convergedCount(b, logPath) > 0 })
	res.converge = time.Since(start)
	if resp, err := http.Get("http://" + addr + "/readyz"); err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("/readyz after the first converge: %v", err)
	} else {
		resp.Body.Close()
	}
	res.hookMS = 1000 * metric(b, addr, "addon_operator_hook_run_seconds_sum") / metric(b, addr, "addon_operator_hook_run_seconds_count")
	res.helmMS = 1000 * metric(b, addr, "addon_operator_helm_seconds_sum") / metric(b, addr, "addon_operator_helm_seconds_count")
	res.upgrades = metric(b, addr, "addon_operator_helm_upgrades")
	hookSum, helmSum := metric(b, addr, "addon_operator_hook_run_seconds_sum"), metric(b, addr, "addon_operator_helm_seconds_sum")

	t0 := time.Now()
	_, err = client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "addon-operator"},
		Data:       map[string]string{"global": "unusedKey: touched\n"},
	}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	poll(b, "the re-converge", func() bool { return convergedCount(b, logPath) > 1 })
	res.reconverge = time.Since(t0)
	res.reupgrades = metric(b, addr, "addon_operator_helm_upgrades") - res.upgrades
	res.reHooks = metric(b, addr, "addon_operator_hook_run_seconds_sum") - hookSum
	res.reHelm = metric(b, addr, "addon_operator_helm_seconds_sum") - helmSum
	res.peakRSS = peakRSS(cmd.Process.Pid)
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

// metric sums every series of a metric from /metrics.
func metric(b testing.TB, addr, name string) float64 {
	resp, err := plain.Get("http://" + addr + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) || (len(line) > len(name) && line[len(name)] != ' ' && line[len(name)] != '{') {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

// peakRSS is VmHWM of a process, in bytes.
func peakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}
