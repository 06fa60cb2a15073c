package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// render and diff go on past a module that fails: every other module is
// rendered, each failure is reported with its module, file and error, and
// the command exits 1 (diff: 2, a failed comparison) at the end; -o json
// lists each module's result.
func TestRenderGoesOnPastFailures(t *testing.T) {
	repo := newRepo(t, t.TempDir())
	files := merged(moduleFiles("001-alpha", "alpha", "1"), moduleFiles("003-beta", "beta", "b"), map[string]string{
		"modules/values.yaml":                    "alphaEnabled: true\nbadEnabled: true\nbetaEnabled: true\n",
		"modules/002-bad/Chart.yaml":             "apiVersion: v2\nname: bad\nversion: 0.1.0\n",
		"modules/002-bad/templates/broken.yaml":  "kind: ConfigMap\n{{ .Values.nope.deeper.still }}\n",
		"modules/002-bad/templates/correct.yaml": "kind: ConfigMap\n",
	})
	c1 := commitFiles(t, repo, "one broken module", files)
	code, out, errOut := cli(t, nil, "render", "--repo", "file://"+repo.Bare, "--ref", c1)
	if code != 1 {
		t.Fatalf("exit code %d, want 1\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "# module: alpha") || !strings.Contains(out, "# module: beta") {
		t.Fatalf("the modules after the failing one are missing:\n%s", out)
	}
	if !strings.Contains(errOut, "module bad: ") || !strings.Contains(errOut, filepath.Join("002-bad", "templates", "broken.yaml")) || !strings.Contains(errOut, "1 module(s) failed to render: bad") {
		t.Fatalf("stderr does not report the failure with its module and file:\n%s", errOut)
	}

	code, out, _ = cli(t, nil, "render", "--repo", "file://"+repo.Bare, "--ref", c1, "-o", "json")
	var res struct {
		Enabled []string `json:"enabled"`
		Modules []struct {
			Name, Manifest, File, Error string
		} `json:"modules"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 1 {
		t.Fatalf("-o json: exit %d, %v\n%s", code, err, out)
	}
	if len(res.Modules) != 3 || res.Modules[0].Manifest == "" || res.Modules[1].Name != "bad" || res.Modules[1].Error == "" ||
		!strings.HasSuffix(res.Modules[1].File, "templates/broken.yaml") || res.Modules[2].Manifest == "" {
		t.Fatalf("-o json modules: %+v", res.Modules)
	}

	c2 := commitFiles(t, repo, "change alpha", moduleFiles("001-alpha", "alpha", "2"))
	code, out, errOut = cli(t, nil, "diff", "--repo", "file://"+repo.Bare, "--from", c1, "--to", c2)
	if code != 2 || !strings.Contains(out, "changed: alpha") || !strings.Contains(out, `+  v: "2"`) || !strings.Contains(errOut, "module bad: ") {
		t.Fatalf("diff: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = cli(t, nil, "diff", "--repo", "file://"+repo.Bare, "--from", c1, "--to", c2, "-o", "json")
	if code != 2 || !strings.Contains(out, `"change": "failed"`) || !strings.Contains(out, `"change": "changed"`) || !strings.Contains(out, `"change": "unchanged"`) {
		t.Fatalf("diff -o json: exit %d\n%s", code, out)
	}
}

// A tree built for an image (charts/helm_lib -> /deckhouse/helm_lib/...,
// a global schema's $ref to /deckhouse/candi/...) renders from a ref and
// from the working copy with --tree-root-alias (or its env), and is refused
// naming the setting without it; a link that leaves the tree through the
// alias is refused by the git syncer.
func TestPreviewTreeRootAlias(t *testing.T) {
	repo := newRepo(t, t.TempDir())
	files := map[string]string{
		"helm_lib/charts/lib/Chart.yaml":       "apiVersion: v2\nname: lib\nversion: 0.1.0\ntype: library\n",
		"helm_lib/charts/lib/templates/_h.tpl": `{{- define "lib.name" }}from-lib{{ end }}`,
		"candi/openapi/defs.yaml":              "definitions:\n  s: {type: string}\n",
		"modules/values.yaml":                  "mEnabled: true\n",
		"modules/001-m/Chart.yaml":             "apiVersion: v2\nname: m\nversion: 0.1.0\n",
		"modules/001-m/templates/cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"lib.name\" . }}\n",
		"global-hooks/openapi/values.yaml":     "type: object\nproperties:\n  p: {$ref: '/deckhouse/candi/openapi/defs.yaml#/definitions/s'}\n",
	}
	link := filepath.Join(repo.Dir, "modules/001-m/charts/helm_lib")
	symlink(t, link, "/deckhouse/helm_lib/charts/lib")
	c1 := commitFiles(t, repo, "a tree built for an image", files)
	url := "file://" + repo.Bare
	ref := []string{"render", "--repo", url, "--ref", c1, "--git-extra-paths", "helm_lib:candi"}
	for _, tt := range []struct {
		name string
		env  []string
		args []string
	}{
		{"a ref, flag", nil, append(ref, "--tree-root-alias", "/deckhouse")},
		{"a ref, env", []string{"ADDON_OPERATOR_TREE_ROOT_ALIAS=/deckhouse"}, ref},
		{"the working copy", nil, []string{"render", "--work-tree", repo.Dir, "--tree-root-alias=/deckhouse"}},
	} {
		code, out, errOut := cli(t, tt.env, tt.args...)
		if code != 0 || !strings.Contains(out, "name: from-lib") {
			t.Fatalf("%s: exit %d\n%s\n%s", tt.name, code, out, errOut)
		}
	}
	for _, args := range [][]string{ref, {"render", "--work-tree", repo.Dir}} {
		code, _, errOut := cli(t, nil, args...)
		if code != 1 || !strings.Contains(errOut, "--tree-root-alias") {
			t.Fatalf("%v without the alias: exit %d\n%s", args, code, errOut)
		}
	}
	if code, _, errOut := cli(t, nil, "render", "--tree-root-alias", "deckhouse"); code != 2 || !strings.Contains(errOut, "absolute path") {
		t.Fatalf("a relative alias: exit %d\n%s", code, errOut)
	}

	// .. after the alias leads out of the checkout: refused before publishing
	symlink(t, link, "/deckhouse/../../etc")
	c2 := commitFiles(t, repo, "a link out through the alias", nil)
	code, _, errOut := cli(t, nil, "render", "--repo", url, "--ref", c2, "--git-extra-paths", "helm_lib:candi", "--tree-root-alias", "/deckhouse")
	if code != 1 || !strings.Contains(errOut, "leads out of the checkout") {
		t.Fatalf("a link out through the alias: exit %d\n%s", code, errOut)
	}
}

// Without git, the alias maps onto the git work tree that holds the
// modules directory; outside any work tree start refuses it, saying why.
func TestWorkTreeTop(t *testing.T) {
	top := t.TempDir()
	if err := os.MkdirAll(filepath.Join(top, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	modules := filepath.Join(top, "ee", "modules")
	if err := os.MkdirAll(modules, 0o755); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(top)
	if got, err := workTreeTop(modules + string(filepath.ListSeparator) + "/elsewhere"); err != nil || got != real {
		t.Fatalf("workTreeTop = %q, %v; want %q", got, err, real)
	}
	if _, err := workTreeTop(t.TempDir()); err == nil || !strings.Contains(err.Error(), "--tree-root-alias") {
		t.Fatalf("outside a work tree: %v", err)
	}
}
