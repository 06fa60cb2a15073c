package lifecycle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func threeModules() map[string]string {
	return merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\nbetaEnabled: true\ngammaEnabled: true\n"},
		withPrefix("modules/001-alpha", moduleChart("alpha", "alpha")),
		withPrefix("modules/002-beta", moduleChart("beta", "beta")),
		withPrefix("modules/003-gamma", moduleChart("gamma", "gamma")))
}

// The purge guard: a revision that would uninstall more than half of the
// modules (here all of them: an empty modules/) is refused until it is
// confirmed; at start-up, releases whose modules are gone stay.
func TestPurgeGuard(t *testing.T) {
	t.Parallel()
	e := parallelSetup(t, threeModules(), nil)
	e.commit = "1111111111111111111111111111111111111111"
	e.start()
	e.waitReady()

	empty := e.checked("2222222222222222222222222222222222222222", map[string]string{"modules/values.yaml": "{}\n"})
	e.op.TreeChanged(empty)
	e.eventually("the revision refused", func() bool { return strings.Contains(e.op.TreeError(), "purge guard") })
	e.idle()
	for _, m := range []string{"alpha", "beta", "gamma"} {
		if !e.hasRelease(m) {
			t.Fatalf("%s was purged by a refused revision", m)
		}
	}
	if st := e.op.Status(); st.Revision != e.commit || !strings.Contains(st.TreeError, "3 of 3 modules") {
		t.Fatalf("status: revision %s, error %q", st.Revision, st.TreeError)
	}

	// a restart on the empty tree leaves the releases alone too
	e.stop()
	restarted := &env{t: t, ns: e.ns, dir: tree(t, map[string]string{"modules/values.yaml": "{}\n", "global-hooks/.keep": ""}),
		cmName: e.cmName, helm: e.helm, records: filepath.Join(t.TempDir(), "records.jsonl"), commit: empty.Commit}
	restarted.start()
	restarted.waitReady()
	if st := restarted.op.Status(); !strings.Contains(st.PurgeError, "purge guard") {
		t.Fatalf("purge error: %q", st.PurgeError)
	}
	if !restarted.hasRelease("alpha") {
		t.Fatal("a restart on an empty tree purged alpha")
	}

	// confirmed: the same revision purges
	restarted.op.ConfirmPurge(empty.Commit)
	restarted.eventually("the confirmed purge", func() bool {
		return !restarted.hasRelease("alpha") && !restarted.hasRelease("beta") && !restarted.hasRelease("gamma")
	})
	if st := restarted.op.Status(); st.PurgeError != "" {
		t.Fatalf("purge error after the confirmation: %q", st.PurgeError)
	}
}

// Removing one module of three is within the default limit.
func TestPurgeWithinLimit(t *testing.T) {
	t.Parallel()
	e := parallelSetup(t, threeModules(), nil)
	e.start()
	e.waitReady()
	files := threeModules()
	for p := range files {
		if strings.HasPrefix(p, "modules/003-gamma/") {
			delete(files, p)
		}
	}
	e.op.TreeChanged(e.checked("3333333333333333333333333333333333333333", files))
	e.eventually("gamma purged", func() bool { return !e.hasRelease("gamma") })
	if e.op.TreeError() != "" || !e.hasRelease("alpha") {
		t.Fatalf("tree error %q", e.op.TreeError())
	}
}

func fourModules() map[string]string {
	return merged(map[string]string{"modules/values.yaml": "{}\n"},
		withPrefix("modules/001-alpha", moduleChart("alpha", "alpha")),
		withPrefix("modules/002-beta", moduleChart("beta", "beta")),
		withPrefix("modules/003-gamma", moduleChart("gamma", "gamma")),
		withPrefix("modules/004-delta", moduleChart("delta", "delta")))
}

// Deleting the values ConfigMap disables every module it enabled: that
// is a change like any other, and its uninstalls pass the purge guard
// together. Refused, the releases stay, /status says why and a Warning
// Event on the source ConfigMap says how to confirm; confirmed, they go.
func TestPurgeGuardDeletedConfigMap(t *testing.T) {
	t.Parallel()
	e := parallelSetup(t, fourModules(), map[string]string{"alphaEnabled": "true", "betaEnabled": "true", "gammaEnabled": "true", "deltaEnabled": "true"})
	e.commit = "4444444444444444444444444444444444444444"
	e.start()
	e.waitReady()
	modules := []string{"alpha", "beta", "gamma", "delta"}
	for _, m := range modules {
		if !e.hasRelease(m) {
			t.Fatalf("%s not installed", m)
		}
	}

	if err := client.CoreV1().ConfigMaps(e.ns).Delete(t.Context(), e.cmName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("the uninstalls refused", func() bool { return strings.Contains(e.op.Status().PurgeError, "4 of 4 modules") })
	e.idle()
	for _, m := range modules {
		if !e.hasRelease(m) {
			t.Fatalf("%s uninstalled past the purge guard", m)
		}
	}
	refusal := e.op.Status().PurgeError
	var event *corev1.Event
	e.eventually("a Warning Event", func() bool {
		evs, err := client.CoreV1().Events(e.ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i, ev := range evs.Items {
			if ev.Reason == "PurgeRefused" {
				event = &evs.Items[i]
				return true
			}
		}
		return false
	})
	if event.Type != corev1.EventTypeWarning || event.InvolvedObject.Name != e.cmName+"-source" || event.Message != refusal {
		t.Fatalf("event: %s on %s: %q; want a Warning on %s-source with %q", event.Type, event.InvolvedObject.Name, event.Message, e.cmName, refusal)
	}

	// the commit alone does not confirm these uninstalls; the token does
	e.op.ConfirmPurge(e.commit)
	e.op.steps.queueReloadAll()
	e.idle()
	if !e.hasRelease("alpha") {
		t.Fatal("confirming the commit confirmed the ConfigMap's uninstalls")
	}
	_, token, ok := strings.Cut(refusal, "confirm-purge ")
	if !ok {
		t.Fatalf("no token in %q", refusal)
	}
	e.op.ConfirmPurge(strings.TrimSuffix(token, "`"))
	e.eventually("the confirmed uninstalls", func() bool {
		for _, m := range modules {
			if e.hasRelease(m) {
				return false
			}
		}
		return true
	})
	if st := e.op.Status(); st.PurgeError != "" {
		t.Fatalf("purge error after the confirmation: %q", st.PurgeError)
	}
}

// An enabled script that fails is not a "false": its module keeps its
// release and is Failed with a one-line error, the other modules
// converge, and once the script answers again the module is back.
func TestEnabledScriptFailureKeepsModule(t *testing.T) {
	t.Parallel()
	files := merged(map[string]string{
		"modules/values.yaml": "alphaEnabled: true\nbetaEnabled: true\n",
		"modules/001-alpha/enabled": "#!/bin/sh\n[ -e \"$RECORD_FILE.fail\" ] && { echo 'token=s3cret' >&2; exit 2; }\n" +
			"echo true > \"$MODULE_ENABLED_RESULT\"\n",
	}, withPrefix("modules/001-alpha", moduleChart("alpha", "alpha")),
		withPrefix("modules/002-beta", moduleChart("beta", "beta")),
		withPrefix("modules/003-gamma", moduleChart("gamma", "gamma")))
	e := parallelSetup(t, files, nil)
	e.start()
	e.waitReady()
	if !e.hasRelease("alpha") || !e.hasRelease("beta") {
		t.Fatal("alpha and beta not installed")
	}
	if err := os.WriteFile(e.records+".fail", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.setConfigMap(map[string]string{"gammaEnabled": "true"})
	e.eventually("gamma installed past alpha's failing script", func() bool { return e.hasRelease("gamma") })
	alpha := func() ModuleStatus { return e.op.Status().Modules[0] }
	e.eventually("alpha Failed", func() bool { return alpha().State == StateFailed })
	if !e.hasRelease("alpha") {
		t.Fatal("a failing enabled script uninstalled alpha")
	}
	if a := alpha(); !a.Enabled || a.LastError != "module alpha: enabled script: exited 2" {
		t.Fatalf("alpha: %+v", a)
	}

	if err := os.Remove(e.records + ".fail"); err != nil {
		t.Fatal(err)
	}
	e.eventually("alpha Ready again", func() bool { return alpha().State == StateReady })
	if !e.hasRelease("alpha") || !e.hasRelease("beta") || !e.hasRelease("gamma") {
		t.Fatal("a release is missing")
	}
}
