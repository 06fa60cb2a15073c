package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// denyWindow is a cluster config whose deny window "freeze" opened at
// from (daily) and stays open for d.
func denyWindow(from time.Time, d time.Duration) string {
	from = from.UTC()
	return fmt.Sprintf("addon-operator:\n  windows:\n    - name: freeze\n      kind: deny\n      schedule: \"%d %d %d * * *\"\n      duration: %s\n",
		from.Second(), from.Minute(), from.Hour(), d.Round(time.Second))
}

// description is the description the forge holds for commit's revision
// status on cluster ("" for none).
func (f *forgeSetup) description(commit, cluster string) string {
	desc := ""
	for _, s := range f.forge.Statuses() {
		if s.Commit == commit && s.Context == "addon-operator/"+cluster {
			desc = s.Description
		}
	}
	return desc
}

// sourceEvents counts the Events on the source ConfigMap by reason, and
// returns their messages.
func sourceEvents(t *testing.T, ns string) (map[string]int, []string) {
	t.Helper()
	evs, err := client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=addon-operator-source"})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	var msgs []string
	for _, e := range evs.Items {
		reasons[e.Reason]++
		msgs = append(msgs, e.Reason+": "+e.Message)
	}
	return reasons, msgs
}

// rolloutOf is /status's source.rollout.
func rolloutOf(t *testing.T, addr string) map[string]any {
	t.Helper()
	r, _ := sourceOf(t, addr)["rollout"].(map[string]any)
	return r
}

// TestWindowHoldsApplyNowAndBroken (docs/operator.md, "Fleets"): a deny
// window, open since the test began, holds a new commit (/status, the
// commit's status, the metric, `source status`); `source apply-now` lets
// it through, with an ApplyNow Event naming who and why (a restart with
// an empty checkout meanwhile starts on the running commit, recorded as
// heldAtRevision, and holds the new one); apply-now set
// with kubectl alone lets a breaking commit through; with the running
// revision failed, the window holds no fix; and a commit held by the fix's
// window, which ends soon, applies once it ends, as does a ConfigMap
// edit the window held meanwhile.
func TestWindowHoldsApplyNowAndBroken(t *testing.T) {
	f := newForgeSetup(t, "window")
	ns, repo := f.ns, f.repo
	begin := time.Now().Add(-2 * time.Second).Truncate(time.Second) // the schedule's seconds
	c1 := commitFiles(t, repo, "freeze", map[string]string{"clusters/test/config.yaml": denyWindow(begin, 10*time.Minute)})
	env := f.env("ADDON_OPERATOR_COMMIT_STATUS_PROVIDER=github", "ADDON_OPERATOR_COMMIT_STATUS_URL="+f.forge.GitHubURL(),
		"ADDON_OPERATOR_COMMIT_STATUS_REPOSITORY=platform/addons")
	op := startOperator(t, env...)
	addr := op.addr
	eventually(t, "alpha 1", func() bool { return cmValue(ns, "001-alpha-cm") == "1" && status(t, addr)["revision"] == c1 })

	// held by the window
	c2 := commitFiles(t, repo, "alpha v2", alphaOn("2"))
	eventually(t, "c2 held by the window", func() bool {
		got := heldBy(t, addr)
		return len(got) == 1 && got[0] == "window "+c2
	})
	eventually(t, "c2's status says held by window", func() bool {
		return strings.HasPrefix(f.description(c2, "test"), `held on test: held by window "freeze" (deny) until `)
	})
	if w, _ := sourceOf(t, addr)["windows"].(map[string]any); w == nil || w["open"] != false || w["heldBy"] != "freeze" {
		t.Fatalf("/status source.windows = %v", w)
	}
	if _, body := get(addr, "/metrics"); !strings.Contains(body, `addon_operator_source_held{by="window"} 1`) {
		t.Fatal(`addon_operator_source_held{by="window"} is not 1`)
	}
	var out strings.Builder
	if err := sourceStatus([]string{"--address", "http://" + addr}, &out); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "windows:      closed: held by window \"freeze\"") || !strings.Contains(s, "held:         "+c2[:12]+" by window since ") {
		t.Fatalf("source status:\n%s", s)
	}
	if cmValue(ns, "001-alpha-cm") != "1" {
		t.Fatal("a commit held by the window was applied")
	}

	// the running commit is recorded while c2 is held: a pod that starts
	// with an empty checkout starts on it, not on c2, and holds c2
	eventually(t, "heldAtRevision", func() bool { return sourceData(t, ns)["heldAtRevision"] == c1 })
	op.stop(15 * time.Second)
	op = startOperator(t, append(env, "GIT_CHECKOUT_DIR="+filepath.Join(t.TempDir(), "checkout"))...)
	addr = op.addr
	eventually(t, "the new pod on c1, holding c2", func() bool {
		got := heldBy(t, addr)
		return status(t, addr)["revision"] == c1 && len(got) == 1 && got[0] == "window "+c2
	})
	if v := cmValue(ns, "001-alpha-cm"); v != "1" {
		t.Fatalf("alpha %q after the restart", v)
	}

	// apply-now through the CLI: applied, with its Event
	sourceCLI(t, ns, "apply-now", c2[:10], "--reason", "INC-42 hotfix")
	eventually(t, "alpha 2 by apply-now", func() bool { return cmValue(ns, "001-alpha-cm") == "2" && status(t, addr)["revision"] == c2 })
	eventually(t, "heldAtRevision removed", func() bool { return sourceData(t, ns)["heldAtRevision"] == "" })
	eventually(t, "the ApplyNow Event", func() bool {
		_, msgs := sourceEvents(t, ns)
		for _, m := range msgs {
			if strings.HasPrefix(m, "ApplyNow: apply-now: commit "+c2) && strings.Contains(m, "(INC-42 hotfix) applies past: held by window") {
				return true
			}
		}
		return false
	})

	// a breaking commit, let through with kubectl alone
	c3 := commitFiles(t, repo, "alpha breaks", alphaHook("exit 1"))
	eventually(t, "c3 held by the window", func() bool {
		got := heldBy(t, addr)
		return len(got) == 1 && got[0] == "window "+c3
	})
	editSource(t, ns, func(d map[string]string) { d["applyNow"] = c3 })
	eventually(t, "c3 running and failed", func() bool {
		r := rolloutOf(t, addr)
		return status(t, addr)["revision"] == c3 && r != nil && r["broken"] == "failed"
	})

	// the fix is not held: the running revision is failed; it brings a
	// window that ends in a few seconds
	end := time.Now().Add(12 * time.Second).Truncate(time.Second)
	c4 := commitFiles(t, repo, "alpha fixed", merge(alphaOn("4"), alphaHook("exit 0"),
		map[string]string{"clusters/test/config.yaml": denyWindow(begin, end.Sub(begin))}))
	eventually(t, "the fix applied despite the window", func() bool { return cmValue(ns, "001-alpha-cm") == "4" && status(t, addr)["revision"] == c4 })
	if last, _ := rolloutOf(t, addr)["last"].(map[string]any); last == nil || last["note"] != "applied despite the window: the running revision is failed" {
		t.Fatalf("/status source.rollout.last = %v", last)
	}

	// under c4's window, c5 is held until it ends, then applies
	c5 := commitFiles(t, repo, "alpha v5", alphaOn("5"))
	eventually(t, "c5 held by the window", func() bool {
		got := heldBy(t, addr)
		return len(got) == 1 && got[0] == "window "+c5
	})
	// a ConfigMap edit is held by the window too, and shown
	setValuesKey(t, ns, "alpha", "v: from-the-configmap\n")
	eventually(t, "the ConfigMap edit held by the window", func() bool {
		for _, h := range heldBy(t, addr) {
			if h == "window <nil>" {
				return true
			}
		}
		return false
	})
	if time.Now().After(end) {
		t.Fatal("too slow: the window ended before c5 and the edit were seen held")
	}
	if v := cmValue(ns, "001-alpha-cm"); v != "4" {
		t.Fatalf("alpha %q while the window holds", v)
	}
	eventually(t, "c5 and the edit applied once the window ended", func() bool {
		return cmValue(ns, "001-alpha-cm") == "from-the-configmap" && status(t, addr)["revision"] == c5
	})
	if time.Now().Before(end) {
		t.Fatalf("c5 applied before the window ended at %s", end)
	}
	if got := heldBy(t, addr); len(got) != 0 {
		t.Fatalf("held after the window ended: %v", got)
	}
}

// sourceData is the source ConfigMap's data.
func sourceData(t *testing.T, ns string) map[string]string {
	t.Helper()
	cm, err := client.CoreV1().ConfigMaps(ns).Get(context.Background(), "addon-operator-source", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data
}

// setValuesKey sets key in the values ConfigMap, as kubectl edit would.
func setValuesKey(t *testing.T, ns, key, value string) {
	t.Helper()
	cms := client.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(context.Background(), "addon-operator", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "addon-operator"}, Data: map[string]string{key: value}}
		if _, err := cms.Create(context.Background(), cm, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[key] = value
	if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
}

// merge is the files of every map, later over earlier.
func merge(files ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range files {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
