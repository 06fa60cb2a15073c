package main

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/internal/testenv"
	"github.com/addonops/addon-operator/kube"
)

func election(t *testing.T, addr string) map[string]any {
	t.Helper()
	le, _ := status(t, addr)["leaderElection"].(map[string]any)
	return le
}

// TestLeaderElection runs two replicas of the binary with leader election
// on one tree and namespace: the second stands by (ready, no hook runs, no
// queues) while the first leads; when the first is stopped it releases the
// Lease and the second takes over at once; a Lease taken by someone else
// makes the leader exit with an error rather than act beside them.
func TestLeaderElection(t *testing.T) {
	ns := namespace(t, "leader")
	dir := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	files := merged(moduleFiles("001-alpha", "alpha", "1"), map[string]string{
		"modules/values.yaml": "alphaEnabled: true\n",
		// records which replica ran it, through the operator's own environment
		"global-hooks/startup.sh": "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"configVersion\":\"v1\",\"onStartup\":1}'; exit 0; fi\necho \"$REPLICA\" >> \"$MARKER_FILE\"\n",
	})
	writeFiles(t, dir, files)
	ran := func() string { b, _ := os.ReadFile(marker); return string(b) }
	const lease = 3 * time.Second
	replica := func(name string) *testOperator {
		return startOperator(t, "ADDON_OPERATOR_NAMESPACE="+ns, "MODULES_DIR="+filepath.Join(dir, "modules"),
			"GLOBAL_HOOKS_DIR="+filepath.Join(dir, "global-hooks"), "ADDON_OPERATOR_LEADER_ELECTION=true",
			"ADDON_OPERATOR_LEADER_ELECTION_LEASE_DURATION="+lease.String(), "REPLICA="+name, "MARKER_FILE="+marker)
	}

	a := replica("a")
	eventually(t, "a to lead and converge", func() bool {
		code, _ := get(a.addr, "/readyz")
		return code == http.StatusOK && cmValue(ns, "001-alpha-cm") == "1"
	})
	if le := election(t, a.addr); le["leading"] != true || le["lease"] != ns+"/addon-operator" {
		t.Fatalf("a's leaderElection = %v", le)
	}
	// each part writes under a field manager of its own (docs/security.md,
	// "Field managers"): the Lease the election's, a release's object Helm's
	managers := func(m []metav1.ManagedFieldsEntry) []string {
		var out []string
		for _, e := range m {
			out = append(out, e.Manager)
		}
		return out
	}
	l, err := client.CoordinationV1().Leases(ns).Get(t.Context(), "addon-operator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := managers(l.ManagedFields); !slices.Equal(got, []string{kube.FieldManagerLeader}) {
		t.Fatalf("the Lease's field managers: %v, want %s", got, kube.FieldManagerLeader)
	}
	cm, err := client.CoreV1().ConfigMaps(ns).Get(t.Context(), "001-alpha-cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := managers(cm.ManagedFields); !slices.Equal(got, []string{kube.FieldManagerHelm}) {
		t.Fatalf("a release object's field managers: %v, want %s", got, kube.FieldManagerHelm)
	}

	b := replica("b")
	aID := election(t, a.addr)["identity"]
	eventually(t, "b to see a as the leader", func() bool { le := election(t, b.addr); return le != nil && le["leader"] == aID })
	// several of b's retry periods pass while it stands by
	time.Sleep(lease * 2 / 3)
	if le := election(t, b.addr); le["leading"] != false {
		t.Fatalf("b's leaderElection = %v", le)
	}
	if code, body := get(b.addr, "/readyz"); code != http.StatusOK || !strings.HasPrefix(body, "standby") {
		t.Fatalf("b's /readyz = %d %q, want 200 standby", code, body)
	}
	if code, _ := get(b.addr, "/queue"); code != http.StatusServiceUnavailable {
		t.Fatalf("b's /queue = %d", code)
	}
	if v := scrape(t, b.addr)["addon_operator_leader"]; v != 0 {
		t.Fatalf("b's addon_operator_leader = %v", v)
	}
	if v := scrape(t, a.addr)["addon_operator_leader"]; v != 1 {
		t.Fatalf("a's addon_operator_leader = %v", v)
	}
	if got := ran(); got != "a\n" {
		t.Fatalf("hook runs = %q, want only a's", got)
	}

	a.stop(15 * time.Second)
	if a.err != nil {
		t.Fatalf("a's exit after SIGTERM: %v", a.err)
	}
	stopped := time.Now()
	eventually(t, "b to take over", func() bool { return election(t, b.addr)["leading"] == true })
	// without the release on SIGTERM it takes the lease expiry: ≥ 2.6 s here
	if took := time.Since(stopped); took > lease*2/3 {
		t.Fatalf("b took %v to take over a released Lease (lease %v)", took, lease)
	}
	eventually(t, "b to converge", func() bool { code, body := get(b.addr, "/readyz"); return code == http.StatusOK && body == "ok\n" })
	if got := ran(); got != "a\nb\n" {
		t.Fatalf("hook runs = %q, want a's then b's", got)
	}

	// someone else takes the Lease: b must stop acting, and say why
	if err := testenv.TakeLease(t.Context(), client, ns, "addon-operator", "intruder"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.done:
	case <-time.After(3 * lease):
		t.Fatal("b still runs after losing the Lease")
	}
	if b.err == nil {
		t.Fatal("b exited 0 after losing the Lease")
	}
	if logs, _ := os.ReadFile(b.log); !strings.Contains(string(logs), "lease lost") {
		t.Fatalf("b's log does not say the lease was lost:\n%s", logs)
	}
}

// TestWebhookToStandby: the Service sends a webhook to any replica; one
// that reaches the standby is relayed, so the leader applies the push at
// once (polling is off in practice here).
func TestWebhookToStandby(t *testing.T) {
	ns := namespace(t, "leader-webhook")
	repo := newRepo(t, t.TempDir())
	push := func(v string) {
		commitFiles(t, repo, "alpha "+v, merged(moduleFiles("001-alpha", "alpha", v), map[string]string{"modules/values.yaml": "alphaEnabled: true\n"}))
	}
	push("1")
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cr3t"), 0o600); err != nil {
		t.Fatal(err)
	}
	replica := func() *testOperator {
		return startOperator(t, "ADDON_OPERATOR_NAMESPACE="+ns, "GIT_URL=file://"+repo.Bare, "GIT_REF=main", "GIT_POLL_INTERVAL=1h",
			"GIT_WEBHOOK_SECRET_FILE="+secret, "GIT_CHECKOUT_DIR="+filepath.Join(t.TempDir(), "checkout"),
			"ADDON_OPERATOR_LEADER_ELECTION=true", "ADDON_OPERATOR_LEADER_ELECTION_LEASE_DURATION=3s")
	}
	a := replica()
	eventually(t, "a to lead and apply 1", func() bool { return cmValue(ns, "001-alpha-cm") == "1" })
	b := replica()
	eventually(t, "b to stand by", func() bool {
		le := election(t, b.addr)
		return le != nil && le["leader"] == election(t, a.addr)["identity"]
	})

	push("2")
	if code := postWebhook(t, b.addr, "s3cr3t"); code != http.StatusAccepted {
		t.Fatalf("webhook to the standby: %d", code)
	}
	eventually(t, "the leader to apply 2", func() bool { return cmValue(ns, "001-alpha-cm") == "2" })
	if election(t, b.addr)["leading"] != false {
		t.Fatal("b took over; the push was not applied through the relay")
	}
}
