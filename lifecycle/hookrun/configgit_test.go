package hookrun

import (
	"strings"
	"testing"

	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
)

// A hook's config patch is checked as it will run: with the config in git
// laid over the ConfigMap it writes (docs/operator.md, "Config in git").
// Here the ConfigMap's alpha.x alone breaks the schema, but git sets
// alpha.x, so the patch is taken and the running data keeps git's value.
func TestConfigPatchUnderConfigInGit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, baseTree(map[string]string{
		"modules/001-alpha/openapi/config-values.yaml": "type: object\nproperties:\n  a: {type: integer}\n  c: {type: integer}\n  x: {type: integer, maximum: 5}\n",
		"modules/001-alpha/hooks/h.sh":                 hookScript(loader.BeforeHelm, `echo '{"op":"add","path":"/alpha/c","value":3}' > "$CONFIG_VALUES_JSON_PATCH_PATH"`),
	}))
	const file = "clusters/a/config.yaml"
	f.model.Config = &clusterconfig.Config{Data: map[string]string{"alpha": "x: 1\n"}, Origin: map[string][]string{"alpha": {file}}, Files: []string{file}}
	f.config.data = map[string]string{"alpha": "x: 9\n"}
	eff, overrides, err := runstate.Effective(f.model, f.config.data)
	if err != nil || len(overrides) != 1 {
		t.Fatalf("Effective: %v, %v", overrides, err)
	}
	store, err := runstate.Admit(f.model, eff, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.trees.Start(&runstate.Tree{Model: f.model, Store: store, ClusterData: f.config.data, ConfigData: eff, Overrides: overrides, ConfigVersion: "1"})

	res, err := f.r.RunHook(t.Context(), f.hook(t, "001-alpha/hooks/h.sh"), loader.BeforeHelm, nil, false)
	if err != nil || !res.ConfigChanged {
		t.Fatalf("the config patch: %+v, %v", res, err)
	}
	cur := f.trees.Load()
	if got := cur.ConfigData["alpha"]; !strings.Contains(got, "x: 1") || !strings.Contains(got, "c: 3") {
		t.Fatalf("running alpha %q, want git's x and the patch's c", got)
	}
	if len(cur.Overrides) != 1 || cur.Overrides[0].String() != "alpha.x" {
		t.Fatalf("overrides %v, want alpha.x", cur.Overrides)
	}
}
