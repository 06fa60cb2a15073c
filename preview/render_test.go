package preview

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/addonops/addon-operator/internal/testtree"
	"github.com/addonops/addon-operator/loader"
)

// A chart whose library is linked by an absolute path (charts/helm_lib ->
// /deckhouse/helm_lib/...) renders through real Helm with the tree root
// alias, its include resolved from the repository's helm_lib; without the
// alias the tree is refused naming the setting.
func TestRenderTreeRootAlias(t *testing.T) {
	t.Parallel()
	root := testtree.New(t, map[string]string{
		"helm_lib/charts/lib/Chart.yaml":          "apiVersion: v2\nname: lib\nversion: 0.1.0\ntype: library\n",
		"helm_lib/charts/lib/templates/_h.tpl":    `{{- define "lib.name" }}from-lib-{{ .Values.global.enabledModules | join "-" }}{{ end }}`,
		"modules/values.yaml":                     "global: {}\nmEnabled: true\n",
		"modules/001-m/Chart.yaml":                "apiVersion: v2\nname: m\nversion: 0.1.0\n",
		"modules/001-m/.helmignore":               "ignored.txt\n",
		"modules/001-m/templates/cm.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"lib.name\" . }}\ndata:\n  files: {{ len .Files | quote }}\n",
		"modules/001-m/ignored.txt":               "x",
		"modules/001-m/files/kept.txt":            "x",
		"global-hooks/openapi/config-values.yaml": "type: object\nproperties:\n  p: {$ref: '/deckhouse/candi/defs.yaml#/definitions/s'}\n",
		"candi/defs.yaml":                         "definitions:\n  s: {type: string}\n",
	})
	if err := os.Symlink("/deckhouse/helm_lib/charts/lib", filepath.Join(root, "modules/001-m/charts/helm_lib")); err != nil {
		if err := os.MkdirAll(filepath.Join(root, "modules/001-m/charts"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/deckhouse/helm_lib/charts/lib", filepath.Join(root, "modules/001-m/charts/helm_lib")); err != nil {
			t.Fatal(err)
		}
	}
	ld := loader.New(loader.WithLogger(quiet()), loader.WithHookConfigs(false), loader.WithTreeRootAlias("/deckhouse"))
	p, err := renderTree(t, ld, root, map[string]string{"global": "p: b\n"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if m := p.Manifests["m"]; !strings.Contains(m, "name: from-lib-m") || !strings.Contains(m, `files: "2"`) { // files/kept.txt and .helmignore, as Helm's LoadDir counts them
		t.Fatalf("manifest:\n%s", m)
	}
	plain := loader.New(loader.WithLogger(quiet()), loader.WithHookConfigs(false))
	if _, err := renderTree(t, plain, root, nil, false); err == nil || !strings.Contains(err.Error(), "--tree-root-alias") {
		t.Fatalf("without the alias: %v", err)
	}
}

// A preview renders every module: one whose chart fails is reported with
// its file (relative to the tree's root) and the others are rendered.
func TestRenderGoesOnPastFailures(t *testing.T) {
	t.Parallel()
	root := testtree.New(t, merged(map[string]string{
		"modules/values.yaml":                   "global: {}\naEnabled: true\nbadEnabled: true\ncEnabled: true\n",
		"modules/002-bad/Chart.yaml":            "apiVersion: v2\nname: bad\nversion: 0.1.0\n",
		"modules/002-bad/templates/broken.yaml": "kind: ConfigMap\n{{ .Values.nope.deeper }}\n",
	}, chart("001-a", "a", "a"), chart("003-c", "c", "c")))
	ld := loader.New(loader.WithLogger(quiet()), loader.WithHookConfigs(false))
	p, err := renderTree(t, ld, root, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Manifests["a"] == "" || p.Manifests["c"] == "" {
		t.Fatalf("manifests: %v", p.Manifests)
	}
	if len(p.Failures) != 1 || p.Failures[0].Module != "bad" || p.Failures[0].File != filepath.Join("modules", "002-bad", "templates", "broken.yaml") || !strings.Contains(p.Failures[0].Error, "nil pointer") {
		t.Fatalf("failures: %+v", p.Failures)
	}
}

// Enabled scripts run only with ExecHooks, with no cluster, running tree
// or metrics: without it a module with one counts as enabled and is
// listed as not evaluated; with it the script decides, and one that fails
// is that module's failure, named by its file in the repository.
func TestRenderEnabledScripts(t *testing.T) {
	t.Parallel()
	files := merged(map[string]string{
		"modules/values.yaml":   "aEnabled: true\nbEnabled: true\ncEnabled: true\n",
		"modules/002-b/enabled": "#!/bin/sh\necho false > \"$MODULE_ENABLED_RESULT\"\n",
		"modules/003-c/enabled": "#!/bin/sh\necho broken >&2; exit 1\n",
		"global-hooks/.keep":    "",
	}, chart("001-a", "a", "a"), chart("002-b", "b", "b"), chart("003-c", "c", "c"))
	tests := []struct {
		name         string
		execHooks    bool
		enabled      []string
		notEvaluated []string
		failures     []Failure
	}{
		{name: "not run", enabled: []string{"a", "b", "c"}, notEvaluated: []string{"b", "c"}},
		{name: "run", execHooks: true, enabled: []string{"a"},
			failures: []Failure{{Module: "c", File: filepath.Join("modules", "003-c", "enabled"), Error: "module c: enabled script: exited 1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := testtree.New(t, files)
			ld := loader.New(loader.WithLogger(quiet()), loader.WithHookConfigs(tt.execHooks))
			p, err := renderTree(t, ld, root, nil, tt.execHooks)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Enabled, tt.enabled) || !slices.Equal(p.NotEvaluated, tt.notEvaluated) || !slices.Equal(p.Failures, tt.failures) {
				t.Fatalf("enabled %v, not evaluated %v, failures %+v; want %v, %v, %+v", p.Enabled, p.NotEvaluated, p.Failures, tt.enabled, tt.notEvaluated, tt.failures)
			}
			for _, m := range tt.enabled {
				if !strings.Contains(p.Manifests[m], "name: "+m+"-values") {
					t.Errorf("%s: manifest %q", m, p.Manifests[m])
				}
			}
		})
	}
}
