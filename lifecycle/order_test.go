package lifecycle

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/addonops/addon-operator/lifecycle/taskkind"
	"github.com/addonops/addon-operator/loader"
)

// Discovery queues the runs of enabled modules, then the deletes of
// disabled ones, then purges (docs/lifecycle.md, steps 5–7), not runs and
// deletes mixed in module order.
func TestDiscoveryOrder(t *testing.T) {
	const hook = `{"beforeHelm": 1, "afterDeleteHelm": 1}`
	files := merged(map[string]string{
		"modules/values.yaml":          "alphaEnabled: true\nbetaEnabled: true\ngammaEnabled: true\n",
		"modules/001-alpha/hooks/a.sh": recordingHook("alpha", hook, ""),
		"modules/002-beta/hooks/b.sh":  recordingHook("beta", hook, ""),
		"modules/003-gamma/hooks/c.sh": recordingHook("gamma", hook, ""),
	}, withPrefix("modules/001-alpha", moduleChart("alpha", "alpha")), withPrefix("modules/002-beta", moduleChart("beta", "beta")),
		withPrefix("modules/003-gamma", moduleChart("gamma", "gamma")))
	e := setup(t, files, nil)
	e.start()
	e.waitReady()
	base := len(e.readRecords())
	e.setConfigMap(map[string]string{"alphaEnabled": "false"})
	e.eventually("alpha deleted", func() bool { return !e.hasRelease("alpha") })
	e.idle()
	want := []string{"beta:beforeHelm", "gamma:beforeHelm", "alpha:afterDeleteHelm"}
	if got := e.sequence()[base:]; !reflect.DeepEqual(got, want) {
		t.Fatalf("hook runs\n got  %v\n want %v", got, want)
	}
}

// Modules of equal weight run at once, each weight finishing before the
// next starts; a retry runs again only the module that failed.
func TestEqualWeightsRunInParallel(t *testing.T) {
	sync := t.TempDir()
	t.Setenv("SYNC_DIR", sync)
	// each of aaa and bbb waits for the other to start: they pass only
	// when they run at the same time
	meet := func(self, other string) string {
		return fmt.Sprintf(`touch "$SYNC_DIR/%s"; for i in $(seq 200); do [ -e "$SYNC_DIR/%s" ] && exit 0; sleep 0.05; done; exit 1`, self, other)
	}
	const failOnce = `if [ ! -e "$SYNC_DIR/ccc-failed" ]; then touch "$SYNC_DIR/ccc-failed"; exit 1; fi`
	const hook = `{"beforeHelm": 1}`
	files := merged(map[string]string{
		"modules/values.yaml":        "aaaEnabled: true\nbbbEnabled: true\ncccEnabled: true\ndddEnabled: true\n",
		"modules/010-aaa/hooks/h.sh": recordingHook("aaa", hook, meet("aaa", "bbb")),
		"modules/010-bbb/hooks/h.sh": recordingHook("bbb", hook, meet("bbb", "aaa")),
		"modules/010-ccc/hooks/h.sh": recordingHook("ccc", hook, failOnce),
		"modules/020-ddd/hooks/h.sh": recordingHook("ddd", hook, ""),
	}, withPrefix("modules/010-aaa", moduleChart("aaa", "aaa")), withPrefix("modules/010-bbb", moduleChart("bbb", "bbb")),
		withPrefix("modules/010-ccc", moduleChart("ccc", "ccc")), withPrefix("modules/020-ddd", moduleChart("ddd", "ddd")))
	e := setup(t, files, nil)
	e.parallel = 3
	e.start()
	e.waitReady()
	seq := e.sequence()
	count := map[string]int{}
	for _, s := range seq {
		count[s]++
	}
	if count["aaa:beforeHelm"] != 1 || count["bbb:beforeHelm"] != 1 || count["ccc:beforeHelm"] != 2 || count["ddd:beforeHelm"] != 1 {
		t.Fatalf("runs: %v (want aaa, bbb once, ccc twice: a retry runs only the failed module)", seq)
	}
	if seq[len(seq)-1] != "ddd:beforeHelm" {
		t.Fatalf("the next weight started before the first finished: %v", seq)
	}
	for _, m := range []string{"aaa", "bbb", "ccc", "ddd"} {
		if !e.hasRelease(m) {
			t.Fatalf("no release for %s", m)
		}
	}
	if n := testutil.ToFloat64(e.op.metrics.ModuleRunErrs.WithLabelValues("ccc")); n != 1 {
		t.Fatalf("module run errors of ccc = %v, want 1", n)
	}
}

// One by one with ParallelModules 1; one task per weight group otherwise.
func TestModuleRunTasks(t *testing.T) {
	mods := []*loader.Module{{Name: "a", Order: 10}, {Name: "b", Order: 10}, {Name: "c", Order: 20}, {Name: "d", Order: 30}, {Name: "e", Order: 30}}
	var runs []moduleRun
	for _, m := range mods {
		runs = append(runs, moduleRun{module: m})
	}
	for _, tc := range []struct {
		parallel int
		want     []string
	}{
		{1, []string{"ModuleRun a", "ModuleRun b", "ModuleRun c", "ModuleRun d", "ModuleRun e"}},
		{4, []string{"ParallelModuleRun weight 10: a, b", "ModuleRun c", "ParallelModuleRun weight 30: d, e"}},
	} {
		o := New(Config{ParallelModules: tc.parallel, Logger: quiet()}, nil, nil, nil)
		var got []string
		for _, task := range o.steps.mods.moduleRunTasks(runs) {
			got = append(got, string(task.Key.Kind)+" "+task.Description)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("parallel %d: %v, want %v", tc.parallel, got, tc.want)
		}
	}
}

// A ConfigMap edit to a module while its weight group waits in "main"
// replaces the module's run in the group: with real Helm, hooks and the
// API server's watch, the module runs once (issue #21: it ran twice).
func TestEditSupersedesRunInWeightGroup(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SYNC_DIR", dir)
	// gamma's run holds "main" while $SYNC_DIR/hold exists, until $SYNC_DIR/go does
	const hold = `if [ -e "$SYNC_DIR/hold" ]; then touch "$SYNC_DIR/held"; for i in $(seq 400); do [ -e "$SYNC_DIR/go" ] && exit 0; sleep 0.05; done; exit 1; fi`
	const hook = `{"beforeHelm": 1}`
	files := merged(map[string]string{
		"modules/values.yaml":          "alphaEnabled: true\nbetaEnabled: true\ngammaEnabled: true\n",
		"modules/001-gamma/hooks/g.sh": recordingHook("gamma", hook, hold),
		"modules/002-alpha/hooks/a.sh": recordingHook("alpha", hook, ""),
		"modules/002-beta/hooks/b.sh":  recordingHook("beta", hook, ""),
	}, withPrefix("modules/001-gamma", moduleChart("gamma", "gamma")), withPrefix("modules/002-alpha", moduleChart("alpha", "alpha")),
		withPrefix("modules/002-beta", moduleChart("beta", "beta")))
	e := setup(t, files, nil)
	e.parallel = 2
	e.start()
	e.waitReady()
	e.idle()
	base := len(e.readRecords())
	touch := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	touch("hold")
	e.op.steps.queueReloadAll()
	e.eventually("gamma's run holding main", func() bool { _, err := os.Stat(filepath.Join(dir, "held")); return err == nil })
	e.eventually("the weight group waiting", func() bool { return waiting(e.op.Queues(), taskkind.ParallelRun) })
	e.setConfigMap(map[string]string{"alpha": "x: 1\n"})
	e.eventually("alpha's own run queued", func() bool { return waiting(e.op.Queues(), taskkind.ModuleRun) })
	touch("go")
	e.eventually("alpha's edit applied", func() bool { return strings.Contains(fmt.Sprint(e.releaseValues("alpha")), "x:1") })
	e.idle()
	count := map[string]int{}
	for _, s := range e.sequence()[base:] {
		count[s]++
	}
	if count["alpha:beforeHelm"] != 1 || count["beta:beforeHelm"] != 1 || count["gamma:beforeHelm"] != 1 {
		t.Fatalf("hook runs after the reload and alpha's edit: %v (want each module once)", e.sequence()[base:])
	}
}
