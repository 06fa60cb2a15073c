package lifecycle

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/lifecycle/taskkind"
)

// Unit tests of the steps on fakes: no API server, no Helm, no hooks. The
// real-parts tests of the same paths are beside them (lifecycle_test.go,
// order_test.go, scoped_test.go, migrate_test.go, purge_test.go).

// chartOnly is a module with a chart and nothing else.
func chartOnly(dir string) map[string]string {
	return withPrefix("modules/"+dir, map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"})
}

func TestStepsDiscoveryOrder(t *testing.T) {
	t.Parallel()
	files := merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\nbetaEnabled: false\ngammaEnabled: true\n"},
		chartOnly("001-alpha"), chartOnly("002-beta"), chartOnly("003-gamma"))
	// beta's release is left from when it was enabled; zeta's module is gone
	helm := newFakeHelm(map[string]fakeRelease{"beta": {ours: true}, "zeta": {ours: true}})
	u := startUnit(t, files, nil, helm)
	want := []string{"upgrade alpha", "upgrade gamma", "uninstall beta", "uninstall zeta"}
	if got := helm.called(); !slices.Equal(got, want) {
		t.Fatalf("Helm calls %v, want %v (runs, then deletes, then purges)", got, want)
	}
	if st := u.state("beta"); st.State != StateDisabled || st.Enabled {
		t.Fatalf("beta: %+v", st)
	}
}

// A module run with a chart starts its release's read before its Helm
// step (beside its beforeHelm hooks); one without a chart reads nothing.
func TestStepsReadAhead(t *testing.T) {
	t.Parallel()
	files := merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\nbetaEnabled: true\n", "modules/002-beta/values.yaml": "beta:\n  x: 1\n"},
		chartOnly("001-alpha"))
	helm := newFakeHelm(nil)
	u := startUnit(t, files, nil, helm)
	u.until("beta ran", func() bool { return u.state("beta").State == StateReady })
	helm.mu.Lock()
	defer helm.mu.Unlock()
	if want := []string{"ahead alpha", "upgrade alpha"}; !slices.Equal(helm.reads, want) {
		t.Fatalf("Helm's reads ahead and upgrades %v, want %v", helm.reads, want)
	}
}

func TestStepsReleaseConflictDoesNotBlock(t *testing.T) {
	t.Parallel()
	files := merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\nbetaEnabled: true\n"},
		chartOnly("001-alpha"), chartOnly("002-beta"))
	helm := newFakeHelm(map[string]fakeRelease{"alpha": {ours: false}})
	u := startUnit(t, files, nil, helm)
	if got := helm.called(); !slices.Equal(got, []string{"upgrade beta"}) {
		t.Fatalf("Helm calls %v: the conflict held up beta", got)
	}
	if st := u.state("alpha"); st.State != StateFailed || !strings.Contains(st.LastError, "not managed by addon-operator") {
		t.Fatalf("alpha: %+v", st)
	}
}

func TestStepsPurgeGuard(t *testing.T) {
	t.Parallel()
	files := merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\n"}, chartOnly("001-alpha"))
	// three of four releases lost their modules: more than half
	helm := newFakeHelm(map[string]fakeRelease{"x": {ours: true}, "y": {ours: true}, "z": {ours: true}, "other-tool": {ours: false}})
	u := startUnit(t, files, nil, helm)
	if got := helm.called(); !slices.Equal(got, []string{"upgrade alpha"}) {
		t.Fatalf("Helm calls %v: the guard let a mass purge through", got)
	}
	if e := u.op.Status().PurgeError; !strings.Contains(e, "would uninstall 3 of 4 modules") {
		t.Fatalf("purgeError = %q", e)
	}
}

// A removed module whose release name another tool holds: the purge
// leaves that release alone and does not hold up "main".
func TestStepsPurgeLeavesForeignRelease(t *testing.T) {
	t.Parallel()
	files := merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\nbetaEnabled: true\ngammaEnabled: true\n"},
		chartOnly("001-alpha"), chartOnly("002-beta"), chartOnly("003-gamma"))
	helm := newFakeHelm(map[string]fakeRelease{"beta": {ours: false}})
	u := startUnit(t, files, nil, helm)
	if err := os.RemoveAll(filepath.Join(u.dir, "modules/002-beta")); err != nil {
		t.Fatal(err)
	}
	u.op.TreeChanged(Revision{})
	u.until("beta gone from the modules", func() bool { return len(u.op.Status().Modules) == 2 })
	u.idle()
	if _, ok := helm.releases["beta"]; !ok {
		t.Fatal("the other tool's release was removed")
	}
	// main goes on: a ConfigMap edit still reaches alpha
	before := len(helm.called())
	u.config.set(map[string]string{"alpha": "x: 1\n"})
	u.until("alpha upgraded", func() bool { return len(helm.called()) > before })
}

func TestStepsModuleScopedReload(t *testing.T) {
	t.Parallel()
	files := merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\nbetaEnabled: true\n"},
		chartOnly("001-alpha"), chartOnly("002-beta"))
	helm := newFakeHelm(nil)
	u := startUnit(t, files, nil, helm)
	before := len(helm.called())
	if err := os.WriteFile(filepath.Join(u.dir, "modules/002-beta/values.yaml"), []byte("beta:\n  x: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u.op.TreeChanged(Revision{})
	u.until("beta upgraded", func() bool { return len(helm.called()) > before })
	u.idle()
	if got := helm.called()[before:]; !slices.Equal(got, []string{"upgrade beta"}) {
		t.Fatalf("Helm calls after a change to beta alone: %v", got)
	}
}

func TestStepsConfigMapSection(t *testing.T) {
	t.Parallel()
	files := merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\nbetaEnabled: true\n"},
		chartOnly("001-alpha"), chartOnly("002-beta"))
	helm := newFakeHelm(nil)
	u := startUnit(t, files, nil, helm)
	before := len(helm.called())
	u.config.set(map[string]string{"alpha": "x: 1\n"})
	u.until("alpha upgraded", func() bool { return len(helm.called()) > before })
	u.idle()
	if got := helm.called()[before:]; !slices.Equal(got, []string{"upgrade alpha"}) {
		t.Fatalf("Helm calls after alpha's section changed: %v", got)
	}
	// *Enabled in the ConfigMap: a reload, and beta is deleted
	u.config.set(map[string]string{"alpha": "x: 1\n", "betaEnabled": "false"})
	u.until("beta deleted", func() bool { return slices.Contains(helm.called(), "uninstall beta") })
}

// The purge guard on fakes: which uninstalls of one discovery count
// together, and what passes.
func TestStepsPurgeGuardCountsDisables(t *testing.T) {
	t.Parallel()
	all := map[string]string{"alphaEnabled": "true", "betaEnabled": "true", "gammaEnabled": "true", "deltaEnabled": "true"}
	tests := []struct {
		name       string
		config     map[string]string
		uninstalls []string // nil: refused
	}{
		{"the ConfigMap emptied: 4 of 4", map[string]string{}, nil},
		{"three of four disabled", map[string]string{"alphaEnabled": "true"}, nil},
		{"two of four disabled: half", map[string]string{"alphaEnabled": "true", "betaEnabled": "true"}, []string{"uninstall delta", "uninstall gamma"}},
		// a flag set to false is the user's word for that module, not an accident
		{"three of four disabled by name", map[string]string{"alphaEnabled": "true", "betaEnabled": "false", "gammaEnabled": "false", "deltaEnabled": "false"},
			[]string{"uninstall beta", "uninstall delta", "uninstall gamma"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := merged(map[string]string{"modules/values.yaml": "{}\n"},
				chartOnly("001-alpha"), chartOnly("002-beta"), chartOnly("003-gamma"), chartOnly("004-delta"))
			helm := newFakeHelm(nil)
			u := startUnit(t, files, all, helm)
			before := len(helm.called())
			u.config.set(tt.config)
			if tt.uninstalls == nil {
				u.until("the refusal", func() bool { return u.op.Status().PurgeError != "" })
				u.idle()
				for _, c := range helm.called()[before:] {
					if strings.HasPrefix(c, "uninstall") {
						t.Fatalf("refused, yet %s", c)
					}
				}
				return
			}
			u.until("the uninstalls", func() bool {
				var got []string
				for _, c := range helm.called()[before:] {
					if strings.HasPrefix(c, "uninstall") {
						got = append(got, c)
					}
				}
				slices.Sort(got)
				return slices.Equal(got, tt.uninstalls)
			})
			if e := u.op.Status().PurgeError; e != "" {
				t.Fatalf("purge error %q", e)
			}
		})
	}
}

// A ConfigMap edit to a module while its weight group's ParallelModuleRun
// waits in "main" replaces the module's run in the group: the module runs
// once, and the rest of the group runs as queued (issue #21: it ran twice).
func TestStepsEditSupersedesRunInWeightGroup(t *testing.T) {
	t.Parallel()
	files := merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\nbetaEnabled: true\ngammaEnabled: true\n"},
		chartOnly("001-gamma"), chartOnly("002-alpha"), chartOnly("002-beta"))
	helm := newFakeHelm(nil)
	u := startUnitWith(t, files, nil, helm, func(c *Config) { c.ParallelModules = 2 })
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	helm.mu.Lock()
	helm.hold = func(name string) {
		if name == "gamma" {
			once.Do(func() { close(held); <-release })
		}
	}
	helm.mu.Unlock()
	before := len(helm.called())
	u.op.steps.queueReloadAll()
	<-held // gamma's run holds "main"; the group of alpha and beta waits behind it
	u.until("the weight group queued", func() bool { return waiting(u.op.Queues(), taskkind.ParallelRun) })
	u.config.set(map[string]string{"alpha": "x: 1\n"})
	close(release)
	u.idle()
	count := map[string]int{}
	for _, c := range helm.called()[before:] {
		count[c]++
	}
	if count["upgrade alpha"] != 1 || count["upgrade beta"] != 1 || count["upgrade gamma"] != 1 {
		t.Fatalf("Helm calls after the reload and alpha's edit: %v (want each module once)", helm.called()[before:])
	}
	if got := fmt.Sprint(helm.releases["alpha"].values); !strings.Contains(got, "x:1") {
		t.Fatalf("alpha's release values %s: not the edit's x: 1", got)
	}
}

// Failures that a retry cannot fix are terminal: the task is not retried,
// "main" goes on, and /status names the reason; the next change runs the
// module again.
func TestStepsTerminalFailures(t *testing.T) {
	t.Parallel()
	requiresParam := withPrefix("modules/001-alpha", map[string]string{
		"openapi/values.yaml": "type: object\nx-required-for-helm: [param1]\nproperties:\n  param1: {type: string}\n",
	})
	tests := []struct {
		name    string
		files   map[string]string
		helm    map[string]fakeRelease
		reason  string
		fixFile string // written to make the next tree change run alpha
		fixBody string
	}{
		{name: "release conflict", helm: map[string]fakeRelease{"alpha": {ours: false}}, reason: reasonReleaseConflict},
		{name: "values refused before Helm", files: requiresParam, reason: reasonValuesRefused,
			fixFile: "modules/001-alpha/values.yaml", fixBody: "alpha:\n  param1: a\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\nbetaEnabled: true\n"},
				chartOnly("001-alpha"), chartOnly("002-beta"), tt.files)
			helm := newFakeHelm(tt.helm)
			u := startUnit(t, files, nil, helm) // waits for "main" to drain: no retry loop
			if got := helm.called(); !slices.Equal(got, []string{"upgrade beta"}) {
				t.Fatalf("Helm calls %v: alpha's failure held up beta", got)
			}
			if st := u.state("alpha"); st.State != StateFailed || st.Reason != tt.reason || st.LastError == "" {
				t.Fatalf("alpha: %+v, want Failed with reason %s", st, tt.reason)
			}
			if tt.fixFile == "" {
				return
			}
			if err := os.WriteFile(filepath.Join(u.dir, tt.fixFile), []byte(tt.fixBody), 0o644); err != nil {
				t.Fatal(err)
			}
			u.op.TreeChanged(Revision{})
			u.until("alpha upgraded", func() bool { return slices.Contains(helm.called(), "upgrade alpha") })
			u.idle()
			if st := u.state("alpha"); st.State != StateReady || st.Reason != "" {
				t.Fatalf("alpha after the fix: %+v", st)
			}
		})
	}
}

// A tree that does not load is refused with a reason, and the running one
// stays.
func TestStepsTreeRefusedReason(t *testing.T) {
	t.Parallel()
	files := merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\n"}, chartOnly("001-alpha"))
	u := startUnit(t, files, nil, newFakeHelm(nil))
	if err := os.WriteFile(filepath.Join(u.dir, "modules/values.yaml"), []byte("alphaEnabled: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u.op.TreeChanged(Revision{})
	u.until("the refusal", func() bool { return u.op.Status().TreeError != "" })
	u.idle()
	if st := u.op.Status(); st.TreeReason != reasonTreeRefused || u.state("alpha").State != StateReady {
		t.Fatalf("status: reason %q, alpha %+v", st.TreeReason, u.state("alpha"))
	}
}

// The purge guard's check records its verdict in the same step, so a
// confirmation racing a check is never lost: either the check sees it and
// passes, or the confirmation finds the refusal and hands the revision
// back to load again (the check and the record were two steps before).
func TestPurgeGuardConfirmationRacingACheck(t *testing.T) {
	t.Parallel()
	for i := range 500 {
		g := &purgeGuard{limit: PurgeNone, logger: quiet()}
		rev := Revision{Revision: gitsync.Revision{Commit: fmt.Sprintf("%040d", i)}}
		var checkErr error
		var reload *Revision
		var wg sync.WaitGroup
		wg.Go(func() { checkErr = g.checkTree(rev, []string{"alpha"}, 2) })
		wg.Go(func() { reload, _ = g.confirm(rev.Commit, "") })
		wg.Wait()
		if checkErr != nil && reload == nil {
			t.Fatalf("round %d: the check refused and the confirmation found nothing to load", i)
		}
		if checkErr == nil && reload != nil {
			t.Fatalf("round %d: passed and handed back for a reload", i)
		}
	}
}
