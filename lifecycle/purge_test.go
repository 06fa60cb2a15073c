package lifecycle

import (
	"path/filepath"
	"strings"
	"testing"
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
	e := setup(t, threeModules(), nil)
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
	e := setup(t, threeModules(), nil)
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
