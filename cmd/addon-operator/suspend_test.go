package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sourceCLI runs `source ARGS...` against the operator's namespace and
// fails the test when it fails; it returns stdout.
func sourceCLI(t *testing.T, ns string, args ...string) string {
	t.Helper()
	code, out, errOut := cli(t, []string{"KUBECONFIG=" + cp.KubeconfigPath, "ADDON_OPERATOR_NAMESPACE=" + ns}, append([]string{"source"}, args...)...)
	if code != 0 {
		t.Fatalf("source %v: exit %d\n%s%s", args, code, out, errOut)
	}
	return out
}

// sourceOf is /status's source.
func sourceOf(t *testing.T, addr string) map[string]any {
	t.Helper()
	src, _ := status(t, addr)["source"].(map[string]any)
	return src
}

// heldBy is /status's source.held as "by commit" lines.
func heldBy(t *testing.T, addr string) []string {
	t.Helper()
	var out []string
	held, _ := sourceOf(t, addr)["held"].([]any)
	for _, h := range held {
		m, _ := h.(map[string]any)
		out = append(out, fmt.Sprintf("%v %v", m["by"], m["commit"]))
	}
	return out
}

// editSource changes the source ConfigMap as kubectl edit would.
func editSource(t *testing.T, ns string, edit func(map[string]string)) {
	t.Helper()
	cms := client.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(context.Background(), "addon-operator-source", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	edit(cm.Data)
	if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
}

// TestSuspendResumeSync (docs/operator.md, "Suspend, resume and sync"):
// with a poll of an hour, `source sync` fetches a new commit at once;
// while suspended (through the CLI, then through kubectl alone) a new
// commit is fetched but not applied, /status, `source status`, the
// metric and the commit's status say it is held, drift is reported and
// not corrected; resume applies it at once; each change is an Event on
// the source ConfigMap.
func TestSuspendResumeSync(t *testing.T) {
	f := newForgeSetup(t, "suspend")
	ns, repo, forge := f.ns, f.repo, f.forge
	env := f.env("ADDON_OPERATOR_COMMIT_STATUS_PROVIDER=github", "ADDON_OPERATOR_COMMIT_STATUS_URL="+forge.GitHubURL(),
		"ADDON_OPERATOR_COMMIT_STATUS_REPOSITORY=platform/addons")
	for i, e := range env {
		if strings.HasPrefix(e, "GIT_POLL_INTERVAL=") {
			env[i] = "GIT_POLL_INTERVAL=1h" // only the source ConfigMap makes it fetch
		}
	}
	op := startOperator(t, env...)
	addr := op.addr
	eventually(t, "alpha 1", func() bool { return cmValue(ns, "001-alpha-cm") == "1" })
	const revision = "addon-operator/test"

	// sync now, not suspended: the new commit applies without a poll
	c2 := commitFiles(t, repo, "alpha v2", alphaOn("2"))
	if out := sourceCLI(t, ns, "sync"); !strings.Contains(out, "fetched "+c2+" (current)") {
		t.Fatalf("source sync: %q", out)
	}
	eventually(t, "alpha 2", func() bool { return cmValue(ns, "001-alpha-cm") == "2" && status(t, addr)["revision"] == c2 })

	// suspended through the CLI: a new commit is fetched, checked, held
	sourceCLI(t, ns, "suspend", "--reason", "release freeze")
	eventually(t, "/status source.suspended", func() bool {
		s, _ := sourceOf(t, addr)["suspended"].(map[string]any)
		return s != nil && s["reason"] == "release freeze" && s["since"] != ""
	})
	c3 := commitFiles(t, repo, "alpha v3", alphaOn("3"))
	if out := sourceCLI(t, ns, "sync"); !strings.Contains(out, "fetched "+c3+" (held by suspend)") {
		t.Fatalf("source sync while suspended: %q", out)
	}
	if got := heldBy(t, addr); len(got) != 1 || got[0] != "suspend "+c3 {
		t.Fatalf("/status source.held = %v", got)
	}
	if cmValue(ns, "001-alpha-cm") != "2" || status(t, addr)["revision"] != c2 {
		t.Fatalf("a held commit was applied: alpha %q, revision %v", cmValue(ns, "001-alpha-cm"), status(t, addr)["revision"])
	}
	eventually(t, "the held commit's status", func() bool {
		for _, s := range forge.Statuses() {
			if s.Commit == c3 && s.Context == revision && s.State == "pending" && s.Description == "held on test: suspended: release freeze" {
				return true
			}
		}
		return false
	})
	if _, body := get(addr, "/metrics"); !strings.Contains(body, `addon_operator_source_held{by="suspend"} 1`) {
		t.Fatal("addon_operator_source_held{by=\"suspend\"} is not 1")
	}
	var out strings.Builder
	if err := sourceStatus([]string{"--address", "http://" + addr}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "suspended:    since ") || !strings.Contains(out.String(), "held:         "+c3[:12]+" by suspend since ") {
		t.Fatalf("source status:\n%s", out.String())
	}
	// drift is reported, not corrected
	cms := client.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(context.Background(), "001-alpha-cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["v"] = "hand"
	if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the hand edit reported as drift, mode suspended", func() bool {
		_, body := get(addr, "/status")
		return strings.Contains(body, `"mode":"suspended"`) || strings.Contains(body, `"mode": "suspended"`)
	})
	if v := cmValue(ns, "001-alpha-cm"); v != "hand" {
		t.Fatalf("drift corrected while suspended: %q", v)
	}

	// resumed: the held commit applies at once
	sourceCLI(t, ns, "resume")
	eventually(t, "alpha 3 after resume", func() bool { return cmValue(ns, "001-alpha-cm") == "3" && status(t, addr)["revision"] == c3 })
	if got := heldBy(t, addr); len(got) != 0 || sourceOf(t, addr)["suspended"] != nil {
		t.Fatalf("after resume: held %v, suspended %v", got, sourceOf(t, addr)["suspended"])
	}

	// suspended with kubectl alone: the same
	editSource(t, ns, func(d map[string]string) { d["suspended"] = "true" })
	eventually(t, "/status source.suspended (kubectl)", func() bool { return sourceOf(t, addr)["suspended"] != nil })
	c4 := commitFiles(t, repo, "alpha v4", alphaOn("4"))
	editSource(t, ns, func(d map[string]string) { d["syncRequested"] = "kubectl-1" })
	eventually(t, "the sync answered in the ConfigMap", func() bool {
		cm, err := cms.Get(context.Background(), "addon-operator-source", metav1.GetOptions{})
		return err == nil && cm.Data["syncAnswered"] == "kubectl-1" && strings.Contains(cm.Data["syncResult"], c4)
	})
	if got := heldBy(t, addr); len(got) != 1 || got[0] != "suspend "+c4 || cmValue(ns, "001-alpha-cm") != "3" {
		t.Fatalf("kubectl suspend: held %v, alpha %q", got, cmValue(ns, "001-alpha-cm"))
	}
	editSource(t, ns, func(d map[string]string) { delete(d, "suspended") })
	eventually(t, "alpha 4 after the kubectl resume", func() bool { return cmValue(ns, "001-alpha-cm") == "4" && status(t, addr)["revision"] == c4 })

	// each change is an Event on the source ConfigMap, naming who
	evs, err := client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=addon-operator-source"})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, e := range evs.Items {
		reasons[e.Reason]++
		if e.Reason == "SourceSuspended" && strings.Contains(e.Message, "release freeze") && !strings.Contains(e.Message, " by ") {
			t.Errorf("the CLI's suspension names nobody: %q", e.Message)
		}
	}
	if reasons["SourceSuspended"] != 2 || reasons["SourceResumed"] != 2 || reasons["SyncRequested"] < 3 {
		t.Fatalf("Events on the source ConfigMap: %v", reasons)
	}
	if logs, _ := os.ReadFile(op.log); strings.Contains(string(logs), "forge-t0ken") {
		t.Fatal("a credential reached the log")
	}
}
