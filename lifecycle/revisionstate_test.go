package lifecycle

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/addonops/addon-operator/lifecycle/runstate"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/internal/testenv/helmtest"
)

// revisionStates records what Config.OnRevisionState is told.
type revisionStates struct {
	mu  sync.Mutex
	all []RevisionState
}

func (r *revisionStates) record(s RevisionState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, s)
}

// of is what commit was told, as "[module ]state[: reason]", with
// repeats in a row left out (a failing task reports each attempt; the
// notifier deduplicates).
func (r *revisionStates) of(commit string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.all {
		if s.Commit != commit {
			continue
		}
		line := strings.TrimSpace(s.Module + " " + s.State)
		if s.Reason != "" {
			line += ": " + s.Reason
		}
		if len(out) == 0 || out[len(out)-1] != line {
			out = append(out, line)
		}
	}
	return out
}

func sha(c byte) string { return strings.Repeat(string(c), 40) }

// Every path by which a revision is adopted ends in a state for its
// commit: a full reload, the same files, a module-scoped reload, a purge,
// a failing hook and its fix, a tree that does not load, the purge guard.
func TestRevisionStates(t *testing.T) {
	t.Parallel()
	files := func(alpha string, beta bool, hook string) map[string]string {
		// the same values.yaml throughout: a module's removal alone is a purge
		enabled := "alphaEnabled: true\nbetaEnabled: true\n"
		f := merged(withPrefix("modules/001-alpha", moduleChart("alpha", "alpha")),
			map[string]string{"modules/001-alpha/values.yaml": "alpha:\n  v: " + alpha + "\n"})
		if beta {
			f = merged(f, withPrefix("modules/002-beta", moduleChart("beta", "beta")))
		}
		if hook != "" {
			f["modules/001-alpha/hooks/h.sh"] = "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"beforeHelm\": 1}'; exit 0; fi\n" + hook + "\n"
		}
		f["modules/values.yaml"] = enabled
		return f
	}
	rec := &revisionStates{}
	e := parallelSetup(t, files("1", true, ""), nil)
	e.commit, e.onRevision = sha('1'), rec.record
	e.start()
	e.waitReady()

	steps := []struct {
		name   string
		commit string
		files  map[string]string // nil: the configured directory, broken
		want   []string
	}{
		{"start-up", sha('1'), nil, []string{"applying", "alpha applied", "beta applied", "applied"}},
		{"the same files", sha('2'), files("1", true, ""), []string{"applying", "applied"}},
		{"module-scoped", sha('3'), files("3", true, ""), []string{"applying", "alpha applied", "applied"}},
		{"purge only", sha('4'), files("3", false, ""), []string{"applying", "applied"}},
		{"failing hook", sha('5'), files("5", false, "echo secret-output >&2; exit 3"), []string{"applying",
			"alpha failed: hook 001-alpha/hooks/h.sh (beforeHelm): exited 3",
			"failed: module alpha: hook 001-alpha/hooks/h.sh (beforeHelm): exited 3"}},
		{"fixed", sha('6'), files("6", false, "exit 0"), []string{"applying", "alpha applied", "applied"}},
		{"tree refused", sha('7'), nil, []string{"failed: the operator refused its tree; the previous revision keeps running (see /status)"}},
		{"purge guard", sha('8'), map[string]string{"modules/values.yaml": "{}\n"}, []string{"failed: held by the purge guard until confirmed (see /status)"}},
	}
	for i, st := range steps {
		switch {
		case i == 0:
		case st.files != nil:
			e.op.TreeChanged(e.checked(st.commit, st.files))
		default:
			// a working copy that no longer loads
			if err := os.WriteFile(filepath.Join(e.dir, "modules/values.yaml"), []byte("alphaEnabled: [\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			e.op.TreeChanged(Revision{Revision: gitsync.Revision{Commit: st.commit}})
		}
		last := ""
		e.eventually(fmt.Sprintf("%s: %v", st.name, st.want), func() bool {
			got := rec.of(st.commit)
			if s := fmt.Sprint(got); s != last {
				t.Logf("%s: %s", st.name, s) // shown when it times out
				last = s
			}
			return slices.Equal(got, st.want)
		})
		if st.name != "failing hook" {
			e.idle()
		}
	}
	e.idle()
	for _, st := range steps {
		if got := rec.of(st.commit); !slices.Equal(got, st.want) {
			t.Errorf("%s: %v, want %v", st.name, got, st.want)
		}
	}
	for _, s := range rec.all {
		if strings.Contains(s.Reason, "secret-output") {
			t.Fatalf("a hook's output in a reason: %+v", s)
		}
	}
}

// A release conflict fails its module and moves on: the revision is
// failed, once, also when the reload ends.
func TestRevisionStateReleaseConflict(t *testing.T) {
	t.Parallel()
	e := parallelSetup(t, twoModules(), nil)
	cfg, err := helmtest.Config(restCfg, e.ns)
	if err != nil {
		t.Fatal(err)
	}
	inst := action.NewInstall(cfg)
	inst.ReleaseName, inst.Namespace = "beta", e.ns
	if _, err := inst.Run(&chart.Chart{Metadata: &chart.Metadata{Name: "beta", Version: "0.1.0", APIVersion: "v2"}}, nil); err != nil {
		t.Fatal(err)
	}
	rec := &revisionStates{}
	e.commit, e.onRevision = sha('c'), rec.record
	e.start()
	e.waitReady()
	want := []string{"applying", "alpha applied", "beta failed: see /status", "failed: module beta: see /status"}
	if got := rec.of(sha('c')); !slices.Equal(got, want) {
		t.Fatalf("states %v, want %v", got, want)
	}
	// of leaves repeats out: count what the reporter was told
	e.idle()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	failed := 0
	for _, s := range rec.all {
		if s.State == RevisionFailed {
			failed++
		}
	}
	if failed != 2 { // beta's and the revision's
		t.Fatalf("failed told %d times, want twice (the module and the revision): %+v", failed, rec.all)
	}
}

// A global hook that fails fails the revision, naming the hook; once it
// passes, the reload ends and the revision is applied.
func TestRevisionStateGlobalHookFailure(t *testing.T) {
	t.Parallel()
	flag := filepath.Join(t.TempDir(), "fail")
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	files := merged(map[string]string{
		"modules/values.yaml": "alphaEnabled: true\n",
		"global-hooks/g.sh": "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"beforeAll\": 1}'; exit 0; fi\n" +
			"if [ -e " + flag + " ]; then echo secret-output >&2; exit 2; fi\n",
	}, withPrefix("modules/001-alpha", moduleChart("alpha", "alpha")))
	rec := &revisionStates{}
	e := parallelSetup(t, files, nil)
	e.commit, e.onRevision = sha('g'), rec.record
	e.start()
	failed := "failed: hook g.sh (beforeAll): exited 2"
	e.eventually("the failure", func() bool { return slices.Contains(rec.of(sha('g')), failed) })
	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	e.waitReady()
	want := []string{"applying", failed, "alpha applied", "applied"}
	if got := rec.of(sha('g')); !slices.Equal(got, want) {
		t.Fatalf("states %v, want %v", got, want)
	}
}

// TestOutcomeWhilePurgeHeld: a reload that converged while the purge
// guard holds its discovery's uninstalls is not "applied".
func TestOutcomeWhilePurgeHeld(t *testing.T) {
	t.Parallel()
	for _, held := range []bool{false, true} {
		rec := &revisionStates{}
		trees := &runstate.Trees{}
		trees.Start(&runstate.Tree{Rev: gitsync.Revision{Commit: sha('9')}})
		r := &revisionReporter{on: rec.record, trees: trees, modules: runstate.NewModules(), held: func() bool { return held }}
		r.outcome()
		want := []string{"applied"}
		if held {
			want = []string{"failed: held by the purge guard until confirmed (see /status)"}
		}
		if got := rec.of(sha('9')); !slices.Equal(got, want) {
			t.Errorf("held %v: %v, want %v", held, got, want)
		}
	}
}
