package preview

import (
	"strings"
	"testing"

	"github.com/addonops/addon-operator/internal/gitserver"
	"github.com/addonops/addon-operator/loader"
)

// RenderRef previews a ref of a real repository (file://, no server), and
// two refs compare; the ref's commit must be signed only when its code
// runs (ExecHooks).
func TestRenderRefAndCompare(t *testing.T) {
	t.Parallel()
	repo, err := gitserver.NewRepo(t.TempDir(), "r", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	commit := func(replicas string) string {
		c, err := repo.CommitFiles("v"+replicas, merged(map[string]string{
			"modules/values.yaml": "aEnabled: true\na: {replicas: " + replicas + "}\n",
			"global-hooks/.keep":  "",
		}, chart("001-a", "a", "a")))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c1, c2 := commit("1"), commit("2")
	ref := func(commit string) Ref {
		return Ref{Repo: "file://" + repo.Bare, Ref: commit, ModulesDirs: []string{"modules"}, GlobalHooksDir: "global-hooks", VerifyKeysDir: t.TempDir()}
	}
	render := func(commit string, execHooks bool) (*Preview, error) {
		ld := loader.New(loader.WithLogger(quiet()), loader.WithHookConfigs(execHooks))
		return RenderRef(t.Context(), ref(commit), Options{Loader: ld, Namespace: "ns", ExecHooks: execHooks, Logger: quiet()})
	}
	before, err := render(c1, false)
	if err != nil {
		t.Fatal(err)
	}
	after, err := render(c2, false)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compare(before, after, c1, c2, false)
	if err != nil {
		t.Fatal(err)
	}
	if c.Change["a"] != Changed || len(c.Diffs) != 1 {
		t.Fatalf("comparison %+v", c)
	}
	// the same ref with its code run is verified against the trusted keys
	// (none here), which the renders above were not
	if _, err := render(c2, true); err == nil || !strings.Contains(err.Error(), "trusted keys") {
		t.Fatalf("an unsigned commit with ExecHooks: %v", err)
	}
}
