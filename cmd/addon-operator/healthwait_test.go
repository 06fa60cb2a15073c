package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/internal/testenv/helmtest"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/lifecycle"
)

// TestHealthWaitOnWorkloads runs the binary in git mode on the control
// plane where pods start, on testdata/healthwait: module dep (weight 10)
// asks that what comes after it wait until it is Healthy, and its pods
// never become ready; module user (weight 20) ships a ConfigMap
// (docs/operator.md, "Health waits"). user is held back while dep rolls
// out, with the wait on /status and in `queue list`; a fix commit to dep
// pre-empts the wait (its timeout is 10 minutes) and applies at once, dep
// turns Healthy and user is deployed from the fix commit.
func TestHealthWaitOnWorkloads(t *testing.T) {
	p := workloadsPlane(t)
	g := startGitOperatorOn(t, p, "healthwait", fixture(t, "healthwait"), "ADDON_OPERATOR_HEALTH_PROGRESS_TIMEOUT=10m")
	w := &watching{t: t, p: p, ns: g.NS, addr: g.Op.addr}

	held := func() string {
		_, body := get(g.Op.addr, "/status")
		var st lifecycle.Status
		if json.Unmarshal([]byte(body), &st) != nil {
			return ""
		}
		for _, q := range st.Queues {
			for _, task := range q.Tasks {
				if task.Kind == "HealthWait" && task.Held != "" {
					return task.Held
				}
			}
		}
		return ""
	}
	eventually(t, "the health wait for dep to hold", func() bool { return held() != "" })
	if h := held(); !strings.HasPrefix(h, "dep to be Healthy (") {
		t.Fatalf("held for %q", h)
	}
	w.health("dep", health.Progressing, 30*time.Second)
	code, out, errOut := cli(t, []string{"ADDON_OPERATOR_LISTEN_ADDRESS=" + g.Op.addr}, "queue", "list")
	if code != 0 || !strings.Contains(out, "held") || !strings.Contains(out, ": dep to be Healthy (") {
		t.Fatalf("queue list: exit %d\n%s%s", code, out, errOut)
	}
	time.Sleep(time.Second)
	if _, err := p.Client.CoreV1().ConfigMaps(g.NS).Get(context.Background(), "user", metav1.GetOptions{}); err == nil {
		t.Fatal("user was deployed while dep was not Healthy")
	}

	start := time.Now()
	fix := commitFiles(t, g.Repo, "dep: ready pods", map[string]string{"modules/010-dep/values.yaml": "dep:\n  neverReady: false\n"})
	eventually(t, "user deployed from the fix commit", func() bool {
		rel, err := helmtest.Last(p.Config, g.NS, "user")
		return err == nil && rel.Labels[kube.LabelCommit] == fix
	})
	t.Logf("the fix commit applied through the wait in %s", time.Since(start).Round(time.Millisecond))
	if rel, err := helmtest.Last(p.Config, g.NS, "dep"); err != nil || rel.Labels[kube.LabelCommit] != fix {
		t.Fatalf("dep's release: %v, %v; want the fix commit %s", rel, err, fix)
	}
	w.health("dep", health.Healthy, 30*time.Second)
	// the first wait was superseded (not counted); the fix's ended Healthy
	w.metrics(`addon_operator_health_waits_total{module="dep",result="healthy"} 1`)
	if _, body := get(g.Op.addr, "/metrics"); strings.Contains(body, `result="timeout"`) || strings.Contains(body, `result="degraded"`) {
		t.Fatal("a wait ended without dep Healthy")
	}
}
