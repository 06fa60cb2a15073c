package lifecycle

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/lifecycle/taskkind"
	"github.com/addonops/addon-operator/loader"
)

// waitingTree: 010-dep ships a Deployment and asks (wait) that what comes
// after it wait until it is Healthy; 020-user ships a ConfigMap with v.
func waitingTree(wait, v string) map[string]string {
	chart := "apiVersion: v2\nname: dep\nversion: 0.1.0\n"
	if wait != "" {
		chart += "annotations:\n  " + loader.HealthWaitAnnotation + ": \"" + wait + "\"\n"
	}
	return merged(
		map[string]string{
			"modules/values.yaml": "depEnabled: true\nuserEnabled: true\n", "modules/010-dep/values.yaml": "dep: {}\n",
			"modules/020-user/values.yaml": "user:\n  v: " + v + "\n",
			"modules/010-dep/Chart.yaml":   chart,
			"modules/010-dep/templates/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: dep\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: dep}\n" +
				"  template:\n    metadata:\n      labels: {app: dep}\n    spec:\n      containers: [{name: app, image: fake}]\n",
		},
		withPrefix("modules/020-user", moduleChart("user", "user")),
	)
}

// markAvailable writes what kube-controller-manager would once the
// Deployment's pods are available (this control plane has none), so
// kstatus finds it Current.
func markAvailable(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	d, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
		}}
	if _, err := client.AppsV1().Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// held is the reason of the held health wait in "main" ("" when none).
func (e *env) held() string {
	for _, q := range e.op.Status().Queues {
		for _, task := range q.Tasks {
			if task.Kind == string(taskkind.HealthWait) && task.Held != "" {
				return task.Held
			}
		}
	}
	return ""
}

// A module whose Chart.yaml asks for it holds the next weight until it is
// Healthy, and nothing a user or git says waits for it: a ConfigMap edit of
// a held module runs it at once, a new revision supersedes the wait. A
// wait that times out, or ends Degraded, lets the next weight run with a
// Warning Event.
func TestHealthWait(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		wait   string
		act    func(e *env)
		result string // the metric's result label for dep's one wait ("": none ended, it was superseded)
		event  bool   // a HealthWaitFailed Event
	}{
		{name: "Healthy ends the wait", wait: "true", result: waitHealthy,
			act: func(e *env) { markAvailable(e.t.(*testing.T), e.ns, "dep") }},
		{name: "a ConfigMap edit runs a held module", wait: "true", result: waitHealthy,
			act: func(e *env) {
				e.setConfigMap(map[string]string{"user": "v: edited\n"})
				e.eventually("the edit to run user", func() bool {
					return e.hasRelease("user") && e.releaseValues("user")["v"] == "edited"
				})
				if e.held() == "" {
					e.t.Fatal("the wait ended with the edit")
				}
				markAvailable(e.t.(*testing.T), e.ns, "dep")
			}},
		{name: "a new revision supersedes the wait", wait: "true",
			act: func(e *env) {
				// an hour's timeout: only the new revision can end this
				e.op.TreeChanged(e.checked("1111111111111111111111111111111111111111", waitingTree("", "next")))
			}},
		{name: "the timeout ends it", wait: "5s", result: waitTimeout, event: true, act: func(*env) {}},
		{name: "Degraded ends it", wait: "true", result: waitDegraded, event: true,
			act: func(e *env) {
				d, err := client.AppsV1().Deployments(e.ns).Get(context.Background(), "dep", metav1.GetOptions{})
				if err != nil {
					e.t.Fatal(err)
				}
				d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Conditions: []appsv1.DeploymentCondition{
					{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}}
				if _, err := client.AppsV1().Deployments(e.ns).UpdateStatus(context.Background(), d, metav1.UpdateOptions{}); err != nil {
					e.t.Fatal(err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := parallelSetup(t, waitingTree(tt.wait, "first"), nil)
			e.commit = "0000000000000000000000000000000000000000"
			e.configure = func(cfg *Config) { cfg.Health = e.withHealth(health.Options{ProgressTimeout: time.Hour}) }
			e.start()
			e.eventually("the health wait to hold", func() bool { return e.held() != "" })
			if !strings.Contains(e.held(), "dep to be Healthy (") {
				t.Fatalf("held for %q", e.held())
			}
			// the hold is not a failure, and it holds
			time.Sleep(300 * time.Millisecond)
			if e.hasRelease("user") || e.op.Ready() {
				t.Fatal("the next weight ran while dep was not Healthy")
			}
			tt.act(e)
			e.waitReady()
			if !e.hasRelease("user") {
				t.Fatal("user was not deployed after the wait")
			}
			for _, r := range []string{waitHealthy, waitDegraded, waitTimeout, waitSkipped} {
				want := 0.0
				if r == tt.result {
					want = 1
				}
				if got := testutil.ToFloat64(e.op.metrics.HealthWaits.WithLabelValues("dep", r)); got != want {
					t.Fatalf("health waits of dep ending %s = %v, want %v", r, got, want)
				}
			}
			if got := e.events("HealthWaitFailed"); (got > 0) != tt.event {
				t.Fatalf("HealthWaitFailed Events: %d, want any: %v", got, tt.event)
			}
			st := e.op.Status()
			if i := slices.IndexFunc(st.Modules, func(m ModuleStatus) bool { return m.Name == "user" }); i < 0 || st.Modules[i].State != StateReady {
				t.Fatalf("user on /status: %+v", st.Modules)
			}
		})
	}
}

// A revision that upgrades a Healthy module that asks to be waited for
// waits again, on its new generation; the next weight gets the revision
// once the new rollout is done. (That the wait never judges the
// generation before the upgrade, when the watch is late, is
// health.TestTrackerRefresh's: here the watch is rarely late.)
func TestHealthWaitAfterUpgrade(t *testing.T) {
	t.Parallel()
	e := parallelSetup(t, waitingTree("true", "first"), nil)
	e.commit = "0000000000000000000000000000000000000000"
	e.configure = func(cfg *Config) { cfg.Health = e.withHealth(health.Options{ProgressTimeout: time.Hour}) }
	e.start()
	e.eventually("the health wait to hold", func() bool { return e.held() != "" })
	markAvailable(t, e.ns, "dep")
	e.waitReady()

	next := waitingTree("true", "second")
	next["modules/010-dep/templates/deployment.yaml"] = strings.Replace(next["modules/010-dep/templates/deployment.yaml"], "image: fake", "image: fake2", 1)
	e.op.TreeChanged(e.checked("1111111111111111111111111111111111111111", next))
	e.eventually("the upgrade's wait to hold", func() bool { return e.held() != "" })
	time.Sleep(300 * time.Millisecond)
	if v := e.releaseValues("user")["v"]; v != "first" {
		t.Fatalf("user has v=%v while dep rolls out its new generation", v)
	}
	markAvailable(t, e.ns, "dep")
	e.eventually("user to get the revision", func() bool { return e.releaseValues("user")["v"] == "second" })
}
