package lifecycle

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/internal/testenv/helmtest"
	"github.com/addonops/addon-operator/kube"
)

// No-git mode: saves to a working copy reach the cluster; a half-typed
// save is refused and the previous tree keeps running until a valid save.
func TestWorkingCopyEdits(t *testing.T) {
	t.Parallel()
	e := parallelSetup(t, twoModules(), nil)
	e.start()
	e.waitReady()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := gitsync.NewTreeWatcher(quiet(), 100*time.Millisecond, filepath.Join(e.dir, "modules"), filepath.Join(e.dir, "global-hooks"))
	go func() { _ = w.Run(ctx, func() { e.op.TreeChanged(Revision{}) }) }()
	time.Sleep(100 * time.Millisecond)
	write := func(p, c string) {
		t.Helper()
		full := filepath.Join(e.dir, p)
		_ = os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	write("modules/001-alpha/values.yaml", "alpha:\n  answer: 42\n")
	e.eventually("alpha upgraded with the saved value", func() bool {
		v := e.releaseValues("alpha")
		return v["answer"] == 42.0
	})

	// a new module, enabled in the same save burst
	for p, c := range withPrefix("modules/003-gamma", moduleChart("gamma", "gamma")) {
		write(p, c)
	}
	write("modules/values.yaml", "global:\n  g: 1\nalphaEnabled: true\nbetaEnabled: true\ngammaEnabled: true\n")
	e.eventually("gamma installed", func() bool { return e.hasRelease("gamma") })

	// a half-typed save: refused, the previous tree stays
	write("modules/002-beta/values.yaml", "beta:\n  x: [1, 2\n")
	e.eventually("the bad save to be refused", func() bool { return e.op.TreeError() != "" })
	if !strings.Contains(e.op.TreeError(), "modules/002-beta/values.yaml") {
		t.Fatalf("tree error does not name the file: %s", e.op.TreeError())
	}
	if !e.hasRelease("beta") || e.op.Status().Modules[1].State != StateReady {
		t.Fatal("a refused tree changed the running modules")
	}
	write("modules/002-beta/values.yaml", "beta:\n  x: [1, 2]\n")
	e.eventually("the fixed save", func() bool {
		return e.op.TreeError() == "" && e.releaseValues("beta")["x"] != nil
	})

	// a removed module directory: purged, without afterDeleteHelm
	base := len(e.readRecords())
	if err := os.RemoveAll(filepath.Join(e.dir, "modules/001-alpha")); err != nil {
		t.Fatal(err)
	}
	e.eventually("alpha purged", func() bool { return !e.hasRelease("alpha") })
	e.idle()
	for _, s := range e.sequence()[base:] {
		if strings.HasPrefix(s, "alpha:") {
			t.Fatalf("a hook of the removed module ran: %s", s)
		}
	}
	if len(e.op.Status().Modules) != 2 {
		t.Fatalf("modules = %+v", e.op.Status().Modules)
	}
}

// A standby follows its ref before it leads: the revision a tree change
// reported before Run is the tree Run loads, so the first converge records
// it on the releases and in /status.
func TestTreeChangedBeforeRun(t *testing.T) {
	t.Parallel()
	const first, latest = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	e := parallelSetup(t, twoModules(), nil)
	e.commit = first
	e.beforeRun = func(o *Operator) { o.TreeChanged(Revision{Revision: gitsync.Revision{Commit: latest}}) }
	e.start()
	e.waitReady()
	for _, m := range []string{"alpha", "beta"} {
		rel, err := helmtest.Last(restCfg, e.ns, m)
		if err != nil {
			t.Fatal(err)
		}
		if c := rel.Labels[kube.LabelCommit]; c != latest {
			t.Fatalf("release %s records commit %q, want %s", m, c, latest)
		}
	}
	if rev := e.op.Status().Revision; rev != latest {
		t.Fatalf("status revision = %q", rev)
	}
}
