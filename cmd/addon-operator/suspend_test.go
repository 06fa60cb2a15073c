package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/commitstatus"
	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/loader"
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
	eventually(t, "the running revision recorded as suspendedRevision", func() bool {
		cm, err := client.CoreV1().ConfigMaps(ns).Get(context.Background(), "addon-operator-source", metav1.GetOptions{})
		return err == nil && cm.Data["suspendedRevision"] == c2
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
	if cm, _ := cms.Get(context.Background(), "addon-operator-source", metav1.GetOptions{}); cm.Data["suspendedRevision"] != "" {
		t.Fatalf("suspendedRevision left after resume: %v", cm.Data)
	}
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

// How the source ConfigMap's keys read: a value of suspended that is not a
// boolean suspends, suspendedAt gives since, a malformed one the time seen.
func TestSuspendedIn(t *testing.T) {
	seen := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)
	at := time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC)
	sha := strings.Repeat("ab", 20)
	for _, tt := range []struct {
		name string
		data map[string]string
		want *suspension
		pin  string
	}{
		{"absent", map[string]string{}, nil, ""},
		{"false", map[string]string{"suspended": "false", "suspendedRevision": sha}, nil, sha},
		{"true, with everything", map[string]string{"suspended": "true", "suspendReason": "freeze", "suspendedBy": "alice", "suspendedAt": at.Format(time.RFC3339)},
			&suspension{Reason: "freeze", By: "alice", Since: at}, ""},
		{"a typo suspends", map[string]string{"suspended": "yes"}, &suspension{Since: seen}, ""},
		{"a malformed time: when seen", map[string]string{"suspended": "1", "suspendedAt": "yesterday"}, &suspension{Since: seen}, ""},
		{"a revision that is not a full SHA", map[string]string{"suspended": "true", "suspendedRevision": "main"}, &suspension{Since: seen}, ""},
		{"a past suspension's time and who (a kubectl resume left them)", map[string]string{"suspended": "true", "suspendedBy": "alice",
			"suspendedAt": at.Format(time.RFC3339), "resumedAt": at.Add(time.Hour).Format(time.RFC3339)}, &suspension{Since: seen}, ""},
		{"suspended again after a resume", map[string]string{"suspended": "true", "suspendedBy": "bob",
			"suspendedAt": at.Add(2 * time.Hour).Format(time.RFC3339), "resumedAt": at.Add(time.Hour).Format(time.RFC3339)}, &suspension{By: "bob", Since: at.Add(2 * time.Hour)}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := suspendedIn(tt.data, seen)
			if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Fatalf("suspendedIn = %+v, want %+v", got, tt.want)
			}
			if pin := pinIn(tt.data, sourceSuspendedRevKey); pin != tt.pin {
				t.Fatalf("pinIn(suspendedRevision) = %q, want %q", pin, tt.pin)
			}
		})
	}
}

// The control's transitions, its gate and its sync requests: a
// suspension without suspendedAt keeps the time it was first seen; a
// request is claimed once, and not when answered.
func TestSourceControl(t *testing.T) {
	now := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)
	var reports []commitstatus.Report
	acting := true
	c := newSourceControl(slog.New(slog.DiscardHandler), func(r commitstatus.Report) { reports = append(reports, r) }, func() bool { return acting })
	c.now = func() time.Time { return now }
	if what, _ := c.update(map[string]string{"suspended": "true", "suspendReason": "freeze"}); what != "suspended" {
		t.Fatalf("transition %q", what)
	}
	now = now.Add(time.Hour)
	if what, s := c.update(map[string]string{"suspended": "true", "suspendReason": "freeze"}); what != "" || !s.Since.Equal(now.Add(-time.Hour)) {
		t.Fatalf("again: %q, since %v", what, s.Since)
	}
	holds := c.gate(gitsync.Revision{Commit: "c2"})
	if len(holds) != 1 || holds[0].By != "suspend" || holds[0].Reason != "freeze" || !c.driftHeld() {
		t.Fatalf("gate: %+v, drift held %v", holds, c.driftHeld())
	}
	if len(reports) != 1 || reports[0] != (commitstatus.Report{Commit: "c2", State: commitstatus.Held, Reason: "suspended: freeze"}) {
		t.Fatalf("reports %+v", reports)
	}
	acting = false // a standby posts nothing
	c.gate(gitsync.Revision{Commit: "c3"})
	if len(reports) != 1 {
		t.Fatalf("a standby reported: %+v", reports)
	}
	if what, _ := c.update(map[string]string{}); what != "resumed" || c.gate(gitsync.Revision{Commit: "c3"}) != nil || c.driftHeld() {
		t.Fatalf("resume: %q", what)
	}

	req := map[string]string{"syncRequested": "t1"}
	if tok, ok := c.ask(req); !ok || tok != "t1" {
		t.Fatal("a new request not claimed")
	}
	if _, ok := c.ask(req); ok {
		t.Fatal("a request claimed twice")
	}
	c.done("t1")
	if _, ok := c.ask(map[string]string{"syncRequested": "t1", "syncAnswered": "t1"}); ok {
		t.Fatal("an answered request claimed")
	}
}

func TestSyncResult(t *testing.T) {
	rev := &gitsync.Revision{Commit: "c9"}
	for _, tt := range []struct {
		st   gitsync.Status
		err  error
		want string
	}{
		{gitsync.Status{Current: rev}, nil, "fetched c9 (current)"},
		{gitsync.Status{Current: &gitsync.Revision{Commit: "c1"}, Pending: rev, Held: []gitsync.Hold{{By: "suspend"}, {By: "window"}}}, nil, "fetched c9 (held by suspend, window)"},
		{gitsync.Status{Current: rev}, errors.New("sync x: refused"), "error: sync x: refused"},
	} {
		if got := syncResult(tt.st, tt.err); got != tt.want {
			t.Errorf("syncResult = %q, want %q", got, tt.want)
		}
	}
}

// A suspended operator whose checkout is empty (a new pod) starts on the
// suspendedRevision, not the ref's newest, and follows the ref again
// after; one with revisions on disk resumes from them, whatever the pin.
func TestFirstPinnedWhileSuspended(t *testing.T) {
	root := t.TempDir()
	repo := newRepo(t, root)
	c1 := commitFiles(t, repo, "alpha v1", alphaOn("1"))
	c2 := commitFiles(t, repo, "alpha v2", alphaOn("2"))
	checkout := filepath.Join(t.TempDir(), "checkout")
	gt := gitOptions{URL: "file://" + repo.Bare, Ref: "main", PollInterval: time.Second}
	newSrc := func() *source {
		s, err := gitsync.New(gitsync.Options[*loader.Model]{URL: gt.URL, Ref: gt.Ref, CheckoutDir: checkout, Require: []string{"modules"},
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return &source{syncer: s}
	}
	suspended := func(context.Context, error) bool { return true }
	src := newSrc()
	rev, err := src.first(t.Context(), gt, c1, &waitingFor{}, suspended)
	if err != nil {
		t.Fatal(err)
	}
	if rev.Commit != c1 || src.syncer.Status().DesiredRef != "main" {
		t.Fatalf("first on an empty checkout: %s (want %s), desired ref %q", rev.Commit, c1, src.syncer.Status().DesiredRef)
	}
	rev, err = newSrc().first(t.Context(), gt, c2, &waitingFor{}, suspended)
	if err != nil {
		t.Fatal(err)
	}
	if rev.Commit != c1 {
		t.Fatalf("first with %s on disk: %s", c1, rev.Commit)
	}

	// a pinned commit that cannot be had: held while suspended, the ref's
	// newest once resumed (a resume frees the start)
	checkout = filepath.Join(t.TempDir(), "checkout")
	var asked atomic.Int32
	rev, err = newSrc().first(t.Context(), gt, strings.Repeat("0", 40), &waitingFor{}, func(context.Context, error) bool { return asked.Add(1) < 2 })
	if err != nil {
		t.Fatal(err)
	}
	if rev.Commit != c2 || asked.Load() < 2 {
		t.Fatalf("after a resume: %s (want %s), asked %d times", rev.Commit, c2, asked.Load())
	}
}
