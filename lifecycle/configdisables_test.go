package lifecycle

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/loader"
)

// A config file that disables modules by their sections' literal false
// (the store's DisabledByConfig, which discovery takes as the user's
// word) is counted at adoption, as <module>Enabled: false is.
func TestConfigDisablesBySectionFalse(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "clusters/dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "clusters/dev/config.yaml"), []byte("alpha: false\nbeta: false\ngamma: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := clusterconfig.Load(t.Context(), root, clusterconfig.Settings{Cluster: "dev", Modules: []string{"alpha", "beta", "gamma"}})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	model := &loader.Model{Modules: []*loader.Module{{Name: "alpha", Key: "alpha"}, {Name: "beta", Key: "beta"}, {Name: "gamma", Key: "gamma"}}}
	before := map[string]string{"alphaEnabled": "true", "betaEnabled": "true", "gammaEnabled": "true"}
	after, _, err := clusterconfig.Overlay(before, cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := configDisables(model, []string{"alpha", "beta", "gamma"}, before, after)
	if len(got) != 3 {
		t.Fatalf("disables counted: %v, want all three", got)
	}
}
