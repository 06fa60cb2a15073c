package drift

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/addonops/addon-operator/kube"
)

// BenchmarkDriftPass: one interval pass of drift checks over 100 releases
// of 5 objects each (a Deployment, a Service, a ServiceAccount, a ConfigMap
// and a Secret) on a real API server (b.N's first round installs them), as the operator runs it: one release
// after another, each release's objects Options.Concurrency at a time.
// cpu-s/pass is this process's CPU time (user + system) per pass; the
// target is ≤ 1 s (docs/benchmarks.md).
func BenchmarkDriftPass(b *testing.B) {
	const releases = 100
	c := controlPlane(b)
	cs := kubernetes.NewForConfigOrDie(c.Config)
	ns := "drift-bench"
	if _, err := cs.CoreV1().Namespaces().Create(b.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	h, err := kube.NewHelm(c.Config, ns, quiet())
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, releases)
	for i := range names {
		names[i] = fmt.Sprintf("bench-%03d", i)
		if _, err := h.Upgrade(b.Context(), kube.Release{Name: names[i], ChartDir: "testdata/bench", ChartHash: "1", Key: "bench", Values: map[string]any{}}); err != nil {
			b.Fatal(err)
		}
	}
	d, err := New(c.Config, ns, h, Options{Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	pass := func() int {
		drifted := 0
		for _, name := range names {
			rep, ok, err := d.Check(b.Context(), name)
			if err != nil || !ok || rep.Checked != 5 {
				b.Fatalf("%s: %+v %v %v", name, rep, ok, err)
			}
			drifted += len(rep.Objects)
		}
		return drifted
	}
	if n := pass(); n != 0 { // warm: discovery, parsed manifests
		b.Fatalf("%d objects drifted right after install", n)
	}
	cpu0, start := cpuTime(), time.Now()
	b.ResetTimer()
	for range b.N {
		pass()
	}
	b.StopTimer()
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/pass")
	b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "wall-s/pass")
}

// cpuTime is this process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
