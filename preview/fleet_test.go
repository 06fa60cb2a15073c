package preview

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/internal/testtree"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/secretfile"
)

// examplesKey is examples/'s committed test-only key, which make run uses.
const examplesKey = "../examples/keys/test-only-age-key.txt"

// examplesTree copies examples/ (the fleet layout README shows) into a
// new tree, as a repository holds it.
func examplesTree(t *testing.T) string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir("../examples", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel("..", p)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return testtree.New(t, files)
}

// Each cluster of examples/ previews with its own config: the shared file
// under its own, its SOPS file decrypted with the key or read as
// placeholders without one, Secrets redacted unless asked for, and the
// --values keys git sets reported as drift, not applied.
func TestRenderFleetExamples(t *testing.T) {
	t.Parallel()
	keyring, err := secretfile.NewKeyring(examplesKey)
	if err != nil {
		t.Fatal(err)
	}
	layers := []clusterconfig.Layer{{Path: "examples/clusters/common.yaml"}, {Path: "examples/clusters/{cluster}/"}}
	for _, tc := range []struct {
		name        string
		cluster     string
		keyring     *secretfile.Keyring
		showSecrets bool
		config      map[string]string // --values
		enabled     []string
		files       []string
		want, gone  []string // in echo-server's manifest
		drift       []string
	}{
		{name: "dev with the key, shown", cluster: "dev", keyring: keyring, showSecrets: true,
			enabled: []string{"echo-server", "feature-flags", "debug-tools"},
			files:   []string{"examples/clusters/common.yaml", "examples/clusters/dev/config.yaml", "examples/clusters/dev/secrets.yaml"},
			want:    []string{`token: "dev-token-not-a-secret"`, "replicas: 1", "name: API_TOKEN"}},
		{name: "dev with the key, redacted", cluster: "dev", keyring: keyring,
			enabled: []string{"echo-server", "feature-flags", "debug-tools"},
			want:    []string{"token: " + Redacted}, gone: []string{"dev-token-not-a-secret"}},
		{name: "dev without a key", cluster: "dev", showSecrets: true,
			enabled: []string{"echo-server", "feature-flags", "debug-tools"},
			want:    []string{`token: "` + secretfile.Placeholder + `"`}, gone: []string{"dev-token-not-a-secret"}},
		{name: "prod", cluster: "prod", enabled: []string{"echo-server", "feature-flags"},
			files: []string{"examples/clusters/common.yaml", "examples/clusters/prod/config.yaml"},
			want:  []string{"replicas: 3"}, gone: []string{"kind: Secret", "API_TOKEN"}},
		{name: "dev over --values", cluster: "dev", keyring: keyring,
			config:  map[string]string{"echoServer": "greeting: from-values\nreplicas: 2\n", "debugToolsEnabled": "false"},
			enabled: []string{"echo-server", "feature-flags", "debug-tools"},
			want:    []string{"replicas: 2"}, drift: []string{"debugToolsEnabled", "echoServer.greeting"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := examplesTree(t)
			ld := loader.New(loader.WithLogger(quiet()), loader.WithHookConfigs(false), loader.WithSecrets(tc.keyring, tc.keyring == nil),
				loader.WithClusterConfig(clusterconfig.Settings{Cluster: tc.cluster, Layers: layers, Keyring: tc.keyring, Preview: tc.keyring == nil}))
			p, err := Render(t.Context(), Options{Loader: ld, Root: root, ModulesDir: filepath.Join(root, "examples/modules"),
				GlobalHooksDir: filepath.Join(root, "examples/global-hooks"), Config: tc.config, Namespace: "ns", ShowSecrets: tc.showSecrets, Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Enabled, tc.enabled) || len(p.Failures) > 0 {
				t.Fatalf("enabled %v, failures %+v", p.Enabled, p.Failures)
			}
			if tc.files != nil && !slices.Equal(p.ConfigFiles, tc.files) {
				t.Errorf("config files %v", p.ConfigFiles)
			}
			m := p.Manifests["echo-server"]
			for _, w := range tc.want {
				if !strings.Contains(m, w) {
					t.Errorf("echo-server lacks %q:\n%s", w, m)
				}
			}
			for _, g := range tc.gone {
				for _, mm := range p.Manifests {
					if strings.Contains(mm, g) {
						t.Errorf("a manifest shows %q:\n%s", g, mm)
					}
				}
			}
			var drift []string
			for _, o := range p.Overrides {
				drift = append(drift, o.String())
			}
			if !slices.Equal(drift, tc.drift) {
				t.Errorf("drift %v, want %v", drift, tc.drift)
			}
		})
	}
}

// A keyless preview reads encrypted values as placeholders; a schema that
// refuses the placeholder fails the preview with an error that says so,
// and the key makes it render.
func TestRenderKeylessSchemaHint(t *testing.T) {
	t.Parallel()
	enc, err := os.ReadFile("../loader/testdata/secrets/module-values.enc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	root := testtree.New(t, merged(chart("010-echo-server", "echo-server", "echoServer"), map[string]string{
		"modules/values.yaml":                                "echoServerEnabled: true\n",
		"modules/010-echo-server/values.yaml":                string(enc),
		"modules/010-echo-server/openapi/config-values.yaml": "type: object\nproperties:\n  token: {type: string, pattern: '^s3'}\n  replicas: {type: integer}\n  nested: {type: object, additionalProperties: true}\n",
	}))
	render := func(k *secretfile.Keyring) (*Preview, error) {
		return renderTree(t, loader.New(loader.WithLogger(quiet()), loader.WithHookConfigs(false), loader.WithSecrets(k, k == nil)), root, nil, false)
	}
	if _, err := render(nil); err == nil || !strings.Contains(err.Error(), "token") || !strings.Contains(err.Error(), "a preview without a key reads the tree's SOPS-encrypted values as <encrypted>") {
		t.Fatalf("keyless: %v", err)
	}
	k, err := secretfile.NewKeyring("../secretfile/testdata/keys/test-only-age-key-a.txt")
	if err != nil {
		t.Fatal(err)
	}
	// it renders, the decrypted value hidden (ShowSecrets off)
	if p, err := render(k); err != nil || strings.Contains(p.Manifests["echo-server"], "s3cret-token") || !strings.Contains(p.Manifests["echo-server"], "<redacted>") {
		t.Fatalf("with the key: %v", err)
	}
	// with the key, a refusal is the schema's alone
	testtree.Write(t, root, map[string]string{"modules/010-echo-server/openapi/config-values.yaml": "type: object\nproperties:\n  token: {type: string, pattern: '^x'}\n  replicas: {type: integer}\n  nested: {type: object, additionalProperties: true}\n"})
	if _, err := render(k); err == nil || strings.Contains(err.Error(), "without a key") {
		t.Fatalf("with the key, refused: %v", err)
	}
}
