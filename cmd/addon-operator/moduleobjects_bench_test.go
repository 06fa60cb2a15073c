package main

import (
	"bufio"
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/addonops/addon-operator/internal/benchtree"
	"github.com/addonops/addon-operator/lifecycle/modulestatus"
)

// BenchmarkModuleObjects runs BenchmarkConverge's converge and no-change
// re-converge of gen-modules.sh 100 with the Module objects off (their CRD
// not served) and on (the chart's CRD applied), in the same run: the
// converge over its own hooks and the re-converge over its hooks (the
// objects must not slow either), peak RSS, and with them on, the Module
// status writes the API server took in each phase (its own
// apiserver_request_total: creates and status updates, no-ops included).
// Run with -benchtime=1x (docs/operator.md, "Module objects").
func BenchmarkModuleObjects(b *testing.B) {
	const n = 100
	tree := b.TempDir()
	if err := benchtree.Generate(n, tree); err != nil {
		b.Skip(err)
	}
	for _, on := range []bool{false, true} {
		name := "objects=off"
		if on {
			name = "objects=on"
		}
		b.Run(name, func(b *testing.B) {
			serveModuleCRD(b, on)
			for range b.N {
				var creates, updates [2]float64
				phase := 0
				before := moduleWrites(b)
				floor := hookFloor(b, tree)
				r := convergeOnce(b, tree, namespace(b, "bench-objects"), n, func(string) {
					// the writer's last pass trails a converge by up
					// to a second: the count settles first
					now := settledModuleWrites(b)
					creates[phase], updates[phase] = now.creates-before.creates, now.updates-before.updates
					before, phase = now, phase+1
				})
				floor = (floor + hookFloor(b, tree)) / 2
				b.ReportMetric(r.converge.Seconds(), "converge-s")
				b.ReportMetric(r.converge.Seconds()/floor.Seconds(), "converge/floor")
				b.ReportMetric(r.reconverge.Seconds()/floor.Seconds(), "reconverge/floor")
				b.ReportMetric(r.converge.Seconds()/(float64(n+1)*r.hookMS/1000), "converge/own-hooks")
				b.ReportMetric(r.reconverge.Seconds(), "reconverge-s")
				b.ReportMetric(r.reconverge.Seconds()/r.reHooks, "reconverge/in-hooks")
				b.ReportMetric(r.hookMS, "hook-ms/run")
				b.ReportMetric(float64(r.peakRSS)/(1<<20), "peak-RSS-MiB")
				b.ReportMetric(creates[0], "converge-creates")
				b.ReportMetric(updates[0], "converge-updates")
				b.ReportMetric(creates[1], "reconverge-creates")
				b.ReportMetric(updates[1], "reconverge-updates")
			}
		})
	}
}

// serveModuleCRD applies the chart's Module CRD (on) or deletes it (off),
// and waits until discovery says so: the operator asks it at start.
func serveModuleCRD(b *testing.B, on bool) {
	crd := filepath.Join("..", "..", "deploy", "chart", "addon-operator", "crds", "modules.addonops.io.yaml")
	gv := modulestatus.GVR.GroupVersion().String()
	if on {
		if out, err := kubectlIn(b, "apply", "-f", crd); err != nil {
			b.Fatalf("kubectl apply the CRD: %v\n%s", err, out)
		}
		if out, err := kubectlIn(b, "wait", "--for=condition=Established", "crd/modules.addonops.io", "--timeout=60s"); err != nil {
			b.Fatalf("the CRD was not established: %v\n%s", err, out)
		}
	} else if out, err := kubectlIn(b, "delete", "--ignore-not-found", "--wait", "-f", crd); err != nil {
		b.Fatalf("kubectl delete the CRD: %v\n%s", err, out)
	}
	poll(b, "discovery to follow the CRD", func() bool {
		_, err := client.Discovery().ServerResourcesForGroupVersion(gv)
		if on {
			return err == nil
		}
		return apierrors.IsNotFound(err)
	})
}

type writeCount struct{ creates, updates float64 }

// moduleWrites is the API server's count of Module object creates and
// status updates so far (the benchmark is its only writer of them).
func moduleWrites(b *testing.B) writeCount {
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	var c writeCount
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="modules"`) ||
			!strings.Contains(line, `group="addonops.io"`) {
			continue
		}
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		switch {
		case strings.Contains(line, `verb="POST"`):
			c.creates += v
		case strings.Contains(line, `verb="PUT"`) && strings.Contains(line, `subresource="status"`):
			c.updates += v
		}
	}
	return c
}

// settledModuleWrites is moduleWrites once it has not moved for three of
// the writer's passes (one a second at most). It reads every 200 ms: the
// API server's metrics are large, and the machine is shared with the
// operator's last writes.
func settledModuleWrites(b *testing.B) writeCount {
	last, since := moduleWrites(b), time.Now()
	deadline := since.Add(time.Minute)
	for time.Since(since) < 3*time.Second {
		if time.Now().After(deadline) {
			b.Fatalf("the Module object writes did not settle: %+v", last)
		}
		time.Sleep(200 * time.Millisecond)
		if now := moduleWrites(b); now != last {
			last, since = now, time.Now()
		}
	}
	return last
}
