package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/internal/forgetest"
	"github.com/addonops/addon-operator/internal/testenv"
	"github.com/addonops/addon-operator/lifecycle"
)

// TestHealthOnWorkloads runs the binary in git mode on the control plane
// where pods start, with commit statuses to a local forge (the JSON
// webhook), on testdata/health: module good, whose Deployment becomes
// Available, and module stuck, whose pods never become ready and whose
// chart gives a 5s progress timeout (docs/operator.md, "Health", "Commit
// status"). good turns Healthy; stuck Progressing, then Degraded naming
// its Deployment: on /status, in `module list`, in the metrics, as an
// Event and as the commit's status, once per state. A fix commit makes
// stuck Healthy, with an Event. Then good breaks without a rollout (its
// pods fail and none may replace them) and is reported Degraded within
// 10 s; let be, it is Healthy again.
func TestHealthOnWorkloads(t *testing.T) {
	p := workloadsPlane(t)
	begin := time.Now()
	forge := forgetest.New("forge-t0ken")
	forge.Secret = "hmac-key"
	t.Cleanup(forge.Close)
	token, secret := filepath.Join(t.TempDir(), "token"), filepath.Join(t.TempDir(), "secret")
	for f, v := range map[string]string{token: "forge-t0ken\n", secret: "hmac-key\n"} {
		if err := os.WriteFile(f, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g := startGitOperatorOn(t, p, "health", fixture(t, "health"),
		"ADDON_OPERATOR_COMMIT_STATUS_PROVIDER=webhook", "ADDON_OPERATOR_COMMIT_STATUS_URL="+forge.WebhookURL(),
		"ADDON_OPERATOR_COMMIT_STATUS_ALLOW_HTTP_HOSTS=127.0.0.1",
		"ADDON_OPERATOR_COMMIT_STATUS_TOKEN_FILE="+token, "ADDON_OPERATOR_COMMIT_STATUS_SECRET_FILE="+secret,
		"ADDON_OPERATOR_COMMIT_STATUS_PER_MODULE=true", "ADDON_OPERATOR_CLUSTER_NAME=kwok",
		"ADDON_OPERATOR_CLUSTER_CONFIG=optional:clusters/{cluster}/config.yaml")
	ns, repo, c1 := g.NS, g.Repo, g.First
	w := &watching{t: t, p: p, ns: ns, addr: g.Op.addr, forge: forge}
	const rev, good, stuck = "addon-operator/kwok", "addon-operator/kwok/good", "addon-operator/kwok/stuck"

	// stuck rolls out, never ready: Progressing with its Deployment, then
	// Degraded once its chart's 5s have passed
	h := w.health("stuck", health.Progressing, 60*time.Second)
	if len(h.Objects) != 1 || h.Objects[0].Kind != "Deployment" || h.Objects[0].Name != "stuck" {
		t.Fatalf("stuck Progressing with %+v: want its Deployment", h.Objects)
	}
	w.health("good", health.Healthy, 60*time.Second)
	h = w.health("stuck", health.Degraded, 30*time.Second)
	if want := "Deployment/" + ns + "/stuck: not Current 5s after its rollout"; !strings.Contains(h.Message, want) {
		t.Fatalf("stuck Degraded: %q, want %q", h.Message, want)
	}
	w.moduleList(map[string]health.Status{"good": health.Healthy, "stuck": health.Degraded})
	w.metrics(`addon_operator_module_health{module="good",status="Healthy"} 1`, `addon_operator_module_health{module="stuck",status="Degraded"} 1`,
		`addon_operator_module_health{module="stuck",status="Progressing"} 0`, `addon_operator_health{status="Degraded"} 1`)
	w.event("Warning", health.ReasonDegraded, "module stuck is Degraded: Deployment/"+ns+"/stuck")
	w.states(c1, rev, "applying", "applied", "degraded")
	w.moduleStates(c1, good, "applied", "progressing", "healthy")
	w.moduleStates(c1, stuck, "applied", "progressing", "degraded")
	for _, s := range forge.Statuses() {
		if s.Commit == c1 && s.Context == rev && s.State == "degraded" && s.Description != "degraded on kwok: module stuck: Deployment "+ns+"/stuck InProgress" {
			t.Fatalf("the revision's degraded description = %q", s.Description)
		}
	}

	// the fix: stuck's pods are ready; Healthy, and an Event says so
	c2 := commitFiles(t, repo, "stuck fixed", map[string]string{"modules/002-stuck/values.yaml": "stuck:\n  neverReady: false\n"})
	w.health("stuck", health.Healthy, 60*time.Second)
	w.event("Normal", health.ReasonHealthy, "module stuck is Healthy")
	w.metrics(`addon_operator_module_health{module="stuck",status="Healthy"} 1`, `addon_operator_health{status="Healthy"} 1`)
	w.states(c2, rev, "applying", "applied", "healthy")
	w.moduleStates(c2, stuck, "applied", "progressing", "healthy")
	w.moduleStates(c2, good, "healthy")

	// later, good breaks without a rollout: no pod may start in the
	// namespace, and kwok fails the running ones
	unblock := blockPods(t, p, ns)
	broke := time.Now()
	pods, err := p.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=good"})
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods.Items {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, testenv.FailPodLabel)
		if _, err := p.Client.CoreV1().Pods(ns).Patch(t.Context(), pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h = w.health("good", health.Degraded, 10*time.Second)
	t.Logf("good Degraded on /status %s after its pods were told to fail (kwok fails them 1-2 s later): %s", time.Since(broke).Round(time.Millisecond), h.Message)
	if want := "Deployment/" + ns + "/good"; !strings.Contains(h.Message, want) || !strings.Contains(h.Message, "broke without a rollout") {
		t.Fatalf("good Degraded: %q, want %q broke without a rollout", h.Message, want)
	}
	w.event("Warning", health.ReasonDegraded, "module good is Degraded: Deployment/"+ns+"/good")
	w.states(c2, rev, "applying", "applied", "healthy", "degraded")
	w.moduleStates(c2, good, "healthy", "degraded")

	// pods may start again: Healthy, an Event, the commit healthy again
	unblock()
	w.health("good", health.Healthy, 60*time.Second)
	w.event("Normal", health.ReasonHealthy, "module good is Healthy")
	w.states(c2, rev, "applying", "applied", "healthy", "degraded", "healthy")
	w.moduleStates(c2, good, "healthy", "degraded", "healthy")
	w.metrics(`addon_operator_health{status="Healthy"} 1`)
	if logs, _ := os.ReadFile(g.Op.log); strings.Contains(string(logs), "forge-t0ken") || strings.Contains(string(logs), "hmac-key") {
		t.Fatal("a commit status credential reached the log")
	}
	t.Logf("test took %s after the control plane was up", time.Since(begin).Round(time.Millisecond))
}

// watching asks the operator at addr, the plane and the forge what a
// user would see.
type watching struct {
	t     *testing.T
	p     *plane
	ns    string
	addr  string
	forge *forgetest.Server
}

// health waits until /status gives module the status want, and returns
// its health.
func (w *watching) health(module string, want health.Status, within time.Duration) health.ModuleHealth {
	w.t.Helper()
	deadline := time.Now().Add(within)
	var last *health.ModuleHealth
	for {
		if h := w.moduleHealth(module); h != nil {
			if h.Status == want {
				return *h
			}
			last = h
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("module %s: health %+v after %s, want %s", module, last, within, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (w *watching) moduleHealth(module string) *health.ModuleHealth {
	resp, err := http.Get("http://" + w.addr + "/status")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var st lifecycle.Status
	if json.NewDecoder(resp.Body).Decode(&st) != nil {
		return nil
	}
	for _, m := range st.Modules {
		if m.Name == module {
			return m.Health
		}
	}
	return nil
}

// moduleList runs `addon-operator module list` as a user would, found
// through the listen address, and checks the HEALTH column.
func (w *watching) moduleList(want map[string]health.Status) {
	w.t.Helper()
	code, out, errOut := cli(w.t, []string{"ADDON_OPERATOR_LISTEN_ADDRESS=" + w.addr}, "module", "list")
	if code != 0 {
		w.t.Fatalf("module list: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if col := slices.Index(strings.Fields(lines[0]), "HEALTH"); col != 4 {
		w.t.Fatalf("module list header %q: want HEALTH fifth", lines[0])
	}
	got := map[string]health.Status{}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > 4 {
			got[f[0]] = health.Status(f[4])
		}
	}
	for name, s := range want {
		if got[name] != s {
			w.t.Fatalf("module list:\n%s\nwant %s %s", out, name, s)
		}
	}
}

// metrics waits until /metrics has each line.
func (w *watching) metrics(lines ...string) {
	w.t.Helper()
	for _, l := range lines {
		eventually(w.t, "metric "+l, func() bool {
			_, body := get(w.addr, "/metrics")
			return strings.Contains(body, "\n"+l+"\n")
		})
	}
}

// event waits for an Event with this type and reason whose message starts
// with msg, and checks there is only one: on the module's Module object
// once the plane serves them (TestHelmChart installs their CRD on the same
// plane), on the values ConfigMap before (docs/operator.md, "Events").
func (w *watching) event(typ, reason, msg string) {
	w.t.Helper()
	var found []string
	eventually(w.t, typ+" "+reason+" "+msg, func() bool {
		list, err := w.p.Client.CoreV1().Events(w.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		found = found[:0]
		for _, e := range list.Items {
			if k := e.InvolvedObject.Kind; (k == "ConfigMap" || k == "Module") && e.Type == typ && e.Reason == reason && strings.HasPrefix(e.Message, msg) {
				found = append(found, e.Message)
			}
		}
		return len(found) > 0
	})
	if len(found) != 1 {
		w.t.Fatalf("%d Events %s %s: %q", len(found), typ, reason, found)
	}
}

// states waits until the forge holds, for commit and the revision's
// context, full's states in order, each once: all of them, or with some
// of the middle ones left out (the notifier posts only the newest state
// waiting for a context, docs/operator.md "Commit status"); the first
// and the last are always there.
func (w *watching) states(commit, context string, full ...string) {
	w.t.Helper()
	w.waitStates(commit, context, full, true)
}

// moduleStates is states for a module's context, where the first state
// may be left out too: a module's run reports applied as the revision
// is applied, and its health follows at once.
func (w *watching) moduleStates(commit, context string, full ...string) {
	w.t.Helper()
	w.waitStates(commit, context, full, false)
}

func (w *watching) waitStates(commit, context string, full []string, first bool) {
	w.t.Helper()
	eventually(w.t, fmt.Sprintf("%s %s: %v", commit[:8], context, full), func() bool {
		got := statesOf(w.forge, commit, context)
		return len(got) > 0 && (!first || got[0] == full[0]) && got[len(got)-1] == full[len(full)-1] && subsequence(got, full)
	})
}

// subsequence tells whether got is full with some elements left out.
func subsequence(got, full []string) bool {
	i := 0
	for _, s := range full {
		if i < len(got) && got[i] == s {
			i++
		}
	}
	return i == len(got)
}

// blockPods refuses the creation of pods in ns (a ValidatingAdmissionPolicy,
// so that the plane's shared node stays as it was) until the returned
// func is called; it returns once the API server refuses them.
func blockPods(t *testing.T, p *plane, ns string) func() {
	t.Helper()
	ctx := t.Context()
	name := ns + "-no-pods"
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			Validations: []admissionv1.Validation{{Expression: "false", Message: "no new pods here: the test breaks a module"}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
			}},
		},
	}
	api := p.Client.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	unblocked := false
	unblock := func() {
		if unblocked {
			return
		}
		unblocked = true
		_ = api.ValidatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = api.ValidatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{})
	}
	t.Cleanup(unblock)
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/probe:1"}}},
	}
	eventually(t, "pods refused in "+ns, func() bool {
		_, err := p.Client.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "no new pods here")
	})
	return unblock
}
