package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/addonops/addon-operator/internal/testenv"
	"github.com/addonops/addon-operator/internal/testenv/helmtest"
)

// The fence test runs a leader in a child process (this test binary
// again), as cmd runs the operator: it exits when Leader.Run returns.
const (
	fenceChildEnv  = "KUBE_TEST_FENCE_CHILD" // namespace,chart dir
	fenceLease     = 3 * time.Second
	fenceLostExit  = 3
	fenceOtherExit = 4
)

// hookManifest is a pre-install hook Job: no controller runs in the test
// control plane, so it never completes and the install waits on it.
const hookManifest = `apiVersion: batch/v1
kind: Job
metadata:
  name: slow-hook
  annotations:
    helm.sh/hook: pre-install
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: wait
        image: busybox
        command: ["sleep", "3600"]
`

// fenceChild leads, installs the hook chart, and exits as cmd does when
// the Lease is lost.
func fenceChild() int {
	ns, chartDir, _ := strings.Cut(os.Getenv(fenceChildEnv), ",")
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return fenceOtherExit
	}
	h, err := NewHelm(cfg, ns, quietLogger(), WithLeaseDuration(fenceLease))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return fenceOtherExit
	}
	l, err := NewLeader(kubernetes.NewForConfigOrDie(cfg), LeaderOptions{Namespace: ns, Name: "operator", Identity: "child", LeaseDuration: fenceLease, Logger: quietLogger()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return fenceOtherExit
	}
	err = l.Run(context.Background(), func(ctx context.Context) error {
		_, err := h.Upgrade(ctx, Release{Name: "fenced", ChartDir: chartDir, Values: map[string]any{}})
		return err
	})
	fmt.Fprintln(os.Stderr, "Run:", err)
	if errors.Is(err, ErrLeadershipLost) {
		return fenceLostExit
	}
	return fenceOtherExit
}

// TestLostLeaseEndsHelmInstall: a leader whose install waits on a chart
// hook loses its Lease; its Run returns and the process ends at once,
// though the install had not finished, leaving its revision pending. A
// successor leaves that young pending revision alone (the old leader
// might still be writing it) and clears it once it is older than the Helm
// timeout plus the lease duration.
func TestLostLeaseEndsHelmInstall(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	hookChart := testChart(t, hookManifest)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fenceChildEnv+"="+ns+","+hookChart, "KUBECONFIG="+kubeconfigPath)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
		}
	}()

	// the child leads and its install waits on the hook
	deadline := time.Now().Add(30 * time.Second)
	for {
		rel, err := helmtest.Last(restCfg, ns, "fenced")
		if err == nil && rel.Info.Status == release.StatusPendingInstall {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child's install did not start: %v; child: %s", err, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// into the hook's wait: the install created the hook's Job
	eventually(t, "the hook's Job", func() bool {
		_, err := client.BatchV1().Jobs(ns).Get(t.Context(), "slow-hook", metav1.GetOptions{})
		return err == nil
	})
	if err := testenv.TakeLease(t.Context(), client, ns, "operator", "successor"); err != nil {
		t.Fatal(err)
	}
	took := time.Now()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != fenceLostExit {
			t.Fatalf("child ended with %v; its stderr: %s", err, stderr.String())
		}
	case <-time.After(4 * fenceLease):
		t.Fatalf("the old leader still runs %s after its Lease was taken (its install goes on)", 4*fenceLease)
	}
	t.Logf("old leader ended %s after its Lease was taken", time.Since(took).Round(time.Millisecond))

	// the successor: the pending revision is young
	h, err := NewHelm(restCfg, ns, quietLogger(), WithLeaseDuration(fenceLease))
	if err != nil {
		t.Fatal(err)
	}
	plain := Release{Name: "fenced", ChartDir: testChart(t, goodManifest), Values: map[string]any{"demo": map[string]any{"v": "1"}}}
	if _, err := h.Upgrade(t.Context(), plain); err == nil || !strings.Contains(err.Error(), "another operator may still be writing it") {
		t.Fatalf("upgrade over a young pending revision: %v", err)
	}
	if rel, err := helmtest.Last(restCfg, ns, "fenced"); err != nil || rel.Info.Status != release.StatusPendingInstall {
		t.Fatalf("young pending revision touched: %v, %v", rel, err)
	}
	// past the Helm timeout plus the lease duration, it is cleared
	h.now = func() time.Time { return time.Now().Add(helmTimeout + fenceLease) }
	if res, err := h.Upgrade(t.Context(), plain); err != nil || res.Reason != "installed" {
		t.Fatalf("upgrade over an old pending revision: %+v, %v", res, err)
	}
}
