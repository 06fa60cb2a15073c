package runstate

import (
	"maps"
	"slices"
	"testing"

	"github.com/addonops/addon-operator/clusterconfig"
)

// A ConfigMap edit is laid under the config in git: a key git sets keeps
// git's value and the edit is only an override (config drift, no values
// change); a key git does not set is the ConfigMap's, as without git
// (docs/operator.md, "Config in git").
func TestSetConfigOverlaysGit(t *testing.T) {
	t.Parallel()
	m := model(t, "alpha", "beta")
	const file = "clusters/a/config.yaml"
	m.Config = &clusterconfig.Config{
		Data:   map[string]string{"alpha": "x: 1\n", "alphaEnabled": "true"},
		Origin: map[string][]string{"alpha": {file}, "alphaEnabled": {file}},
		Files:  []string{file},
	}
	eff, overrides, err := Effective(m, nil)
	if err != nil || len(overrides) > 0 {
		t.Fatalf("Effective: %v, %v", overrides, err)
	}
	store, err := Admit(m, eff, nil)
	if err != nil {
		t.Fatal(err)
	}
	var trees Trees
	trees.Start(&Tree{Model: m, Store: store, ConfigData: eff, ConfigVersion: "1"})

	for i, tc := range []struct {
		name      string
		cluster   map[string]string
		overrides []string // key.path
		changed   []string // module keys whose values changed
		alpha     string   // the effective alpha section
	}{
		{name: "an edit of a key git sets", cluster: map[string]string{"alpha": "x: 2\n"},
			overrides: []string{"alpha.x"}, alpha: "x: 1\n"},
		{name: "a flag git sets", cluster: map[string]string{"alpha": "x: 2\n", "alphaEnabled": "false"},
			overrides: []string{"alpha.x", "alphaEnabled"}, alpha: "x: 1\n"},
		{name: "a key git does not set", cluster: map[string]string{"beta": "x: 3\n"},
			changed: []string{"beta"}, alpha: "x: 1\n"},
		{name: "the same value as git's", cluster: map[string]string{"alpha": "x: 1\n", "beta": "x: 3\n"},
			alpha: "x: 1\n"},
	} {
		version := string(rune('2' + i))
		ch, ok, err := trees.SetConfig(tc.cluster, version, nil)
		if err != nil || !ok {
			t.Fatalf("%s: SetConfig: %v, %v", tc.name, ok, err)
		}
		tr := trees.Load()
		var got []string
		for _, o := range tr.Overrides {
			got = append(got, o.String())
			if o.File != file {
				t.Errorf("%s: override %s names %q, want %s", tc.name, o, o.File, file)
			}
		}
		if !slices.Equal(got, tc.overrides) {
			t.Errorf("%s: overrides %v, want %v", tc.name, got, tc.overrides)
		}
		if !slices.Equal(ch.Modules, tc.changed) || ch.Enabled || ch.Global {
			t.Errorf("%s: change %+v, want modules %v", tc.name, ch, tc.changed)
		}
		if tr.ConfigData["alpha"] != tc.alpha || tr.ConfigData["alphaEnabled"] != "true" {
			t.Errorf("%s: effective data %v", tc.name, tr.ConfigData)
		}
		if !maps.Equal(tr.ClusterData, tc.cluster) {
			t.Errorf("%s: cluster data %v, want %v", tc.name, tr.ClusterData, tc.cluster)
		}
	}
}
