package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/addonops/addon-operator/clusterconfig"
)

// The config in git's settings (docs/operator.md, "Config in git"): the
// name is a DNS name and needs a git source, layers may be optional, the
// checkout takes the layers' paths, and the sops tool's variable names the
// key files when ours is unset.
func TestClusterSettings(t *testing.T) {
	git := []string{"--git-url", "https://git.example.com/a.git"}
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		bad     string // what the error says
		layers  []clusterconfig.Layer
		paths   []string
		keyFile []string
	}{
		{name: "off", args: nil},
		{name: "the default layer", args: append([]string{"--cluster-name", "prod-eu"}, git...),
			paths: []string{"clusters/prod-eu/config.yaml"}},
		{name: "layers", args: append([]string{"--cluster-name", "a", "--cluster-config", "clusters/common-*.yaml,optional:clusters/{cluster}/"}, git...),
			layers: []clusterconfig.Layer{{Path: "clusters/common-*.yaml"}, {Path: "clusters/{cluster}/", Optional: true}},
			paths:  []string{"clusters", "clusters/a"}},
		{name: "a glob at the root", args: append([]string{"--cluster-name", "a", "--cluster-config", "./*.yaml"}, git...), bad: "a glob in the first folder"},
		{name: "spaces around a layer", args: append([]string{"--cluster-name", "a", "--cluster-config", "c/a.yaml, optional:c/b.yaml"}, git...),
			layers: []clusterconfig.Layer{{Path: "c/a.yaml"}, {Path: "c/b.yaml", Optional: true}}, paths: []string{"c/a.yaml", "c/b.yaml"}},
		{name: "the environment, the sops tool's key variable", env: map[string]string{"ADDON_OPERATOR_CLUSTER_NAME": "a", "GIT_URL": "file:///r", "SOPS_AGE_KEY_FILE": "/k1,/k2"},
			paths: []string{"clusters/a/config.yaml"}, keyFile: []string{"/k1", "/k2"}},
		{name: "ours wins", env: map[string]string{"ADDON_OPERATOR_SOPS_KEY_FILE": "/ours", "SOPS_AGE_KEY_FILE": "/theirs"}, keyFile: []string{"/ours"}},
		{name: "no git source", args: []string{"--cluster-name", "a"}, bad: "needs a git source"},
		{name: "not a DNS name", args: append([]string{"--cluster-name", "Prod_EU"}, git...), bad: "want a DNS name"},
		{name: "layers without a name", args: append([]string{"--cluster-config", "c.yaml"}, git...), bad: "needs --cluster-name"},
		{name: "an empty layer", args: append([]string{"--cluster-name", "a", "--cluster-config", "optional:"}, git...), bad: "an empty layer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range []string{"ADDON_OPERATOR_CLUSTER_NAME", "GIT_URL", "SOPS_AGE_KEY_FILE", "ADDON_OPERATOR_SOPS_KEY_FILE", "ADDON_OPERATOR_CLUSTER_CONFIG"} {
				t.Setenv(n, tc.env[n])
			}
			o, err := parseStart(tc.args)
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("err = %v, want %q", err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			layers, _ := o.cl.layers()
			if !slices.Equal(layers, tc.layers) || !slices.Equal(o.cl.KeyFiles, tc.keyFile) {
				t.Errorf("layers %v, key files %v", layers, o.cl.KeyFiles)
			}
			if o.cl.Name != "" && !slices.Equal(o.cl.checkoutPaths(), tc.paths) {
				t.Errorf("checkout paths %v, want %v", o.cl.checkoutPaths(), tc.paths)
			}
		})
	}
}

// The keyring is made from the key files; it never prints a secret key,
// and a missing key file stops start-up naming the setting.
func TestClusterKeyring(t *testing.T) {
	key, err := os.ReadFile(filepath.Join("..", "..", "secretfile", "testdata", "keys", "test-only-age-key-a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "key.txt"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	_, s, err := clusterOptions{Name: "a", KeyFiles: []string{dir}}.loaderOptions(false)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Keyring.String(); strings.Contains(got, "AGE-SECRET-KEY") || !strings.Contains(got, "age1") {
		t.Fatalf("keyring %s", got)
	}
	if _, _, err := (clusterOptions{Name: "a", KeyFiles: []string{filepath.Join(dir, "none")}}).loaderOptions(false); err == nil || !strings.Contains(err.Error(), "--sops-key-file") {
		t.Fatalf("a missing key file: %v", err)
	}
	if _, s, err := (clusterOptions{}).loaderOptions(false); s != nil || err != nil {
		t.Fatalf("off: %v, %v", s, err)
	}
}
