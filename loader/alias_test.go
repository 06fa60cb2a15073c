package loader

import (
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// aliasTree is a tree built for an image whose repository sits at
// /deckhouse: a module's charts/helm_lib and a global schema's $ref name
// files of the repository by that absolute prefix.
func aliasTree(t *testing.T, link, ref string) string {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "repo")
	writeFile(t, filepath.Join(base, "secret.yaml"), "type: string\n", 0o644)
	writeFile(t, filepath.Join(root, "helm_lib/charts/lib/Chart.yaml"), "apiVersion: v2\nname: lib\nversion: 0.1.0\ntype: library\n", 0o644)
	writeFile(t, filepath.Join(root, "helm_lib/charts/lib/templates/_h.tpl"), `{{- define "lib.name" }}from-lib{{ end }}`, 0o644)
	// a relative $ref in a file an absolute one reached resolves beside it
	writeFile(t, filepath.Join(root, "candi/openapi/defs.yaml"), "definitions:\n  s: {$ref: 'more.yaml#/definitions/t'}\n  out: {$ref: '../../../secret.yaml'}\n", 0o644)
	writeFile(t, filepath.Join(root, "candi/openapi/more.yaml"), "definitions:\n  t: {type: string, enum: [a]}\n", 0o644)
	writeFile(t, filepath.Join(root, "modules/values.yaml"), "global: {}\nmEnabled: true\n", 0o644)
	writeFile(t, filepath.Join(root, "modules/001-m/Chart.yaml"), "apiVersion: v2\nname: m\nversion: 0.1.0\n", 0o644)
	writeFile(t, filepath.Join(root, "modules/001-m/templates/cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"lib.name\" . }}\n", 0o644)
	writeFile(t, filepath.Join(root, "global-hooks/openapi/values.yaml"), "type: object\nproperties:\n  p: {$ref: '"+ref+"'}\n", 0o644)
	if err := os.MkdirAll(filepath.Join(root, "modules/001-m/charts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(link, filepath.Join(root, "modules/001-m/charts/helm_lib")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../..", filepath.Join(root, "up")); err != nil { // the root's parent
		t.Fatal(err)
	}
	return root
}

// With --tree-root-alias=/deckhouse an absolute link and an absolute $ref
// beneath it read the repository's files; without it each is refused
// naming the setting; a mapped path that leaves the tree (.. after the
// alias, a link out) is refused either way (docs/security.md).
func TestTreeRootAlias(t *testing.T) {
	const lib, ref = "/deckhouse/helm_lib/charts/lib", "/deckhouse/candi/openapi/defs.yaml#/definitions/s"
	tests := []struct {
		name, alias, link, ref, wantErr string
	}{
		{name: "mapped", alias: "/deckhouse", link: lib, ref: ref},
		{name: "alias with a trailing slash", alias: "/deckhouse/", link: lib, ref: ref},
		{name: "link, no alias", link: lib, ref: "#/definitions/x", wantErr: "symlink leads out of the tree (to /deckhouse/helm_lib/charts/lib)"},
		{name: "ref, no alias", link: "../../../helm_lib/charts/lib", ref: ref, wantErr: "is an absolute path"},
		{name: "link, another prefix", alias: "/deckhouse", link: "/srv/helm_lib/charts/lib", ref: ref, wantErr: "not beneath"},
		{name: "link, dot-dot after the alias", alias: "/deckhouse", link: "/deckhouse/../secret", ref: ref, wantErr: "symlink leads out of the tree"},
		{name: "link, out through a link", alias: "/deckhouse", link: "/deckhouse/up/secret", ref: ref, wantErr: "symlink leads out of the tree"},
		{name: "ref, dot-dot after the alias", alias: "/deckhouse", link: lib, ref: "/deckhouse/../secret.yaml", wantErr: "not beneath"},
		{name: "ref, out through a link", alias: "/deckhouse", link: lib, ref: "/deckhouse/up/secret.yaml", wantErr: "escapes"},
		{name: "ref, a relative ref out of the aliased file", alias: "/deckhouse", link: lib, ref: "/deckhouse/candi/openapi/defs.yaml#/definitions/out", wantErr: "not beneath"},
		{name: "ref, another prefix", alias: "/deckhouse", link: lib, ref: "/etc/passwd", wantErr: "not beneath"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := aliasTree(t, tt.link, tt.ref)
			if strings.HasPrefix(tt.ref, "#") {
				writeFile(t, filepath.Join(root, "global-hooks/openapi/values.yaml"), "type: object\ndefinitions:\n  x: {type: string}\nproperties:\n  p: {$ref: '#/definitions/x'}\n", 0o644)
			}
			l := New(WithLogger(quietLogger()), WithHookConfigs(false), WithTreeRootAlias(tt.alias))
			m, err := l.Load(t.Context(), root, filepath.Join(root, "modules"), filepath.Join(root, "global-hooks"))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if tt.alias == "" && !strings.Contains(err.Error(), "--tree-root-alias") {
					t.Fatalf("err = %v, does not name the setting", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Global.Schemas.Values.Validate("global", map[string]any{"p": "b"}); err == nil {
				t.Fatal("the enum of the aliased $ref was not enforced")
			}
			b, err := fs.ReadFile(m.ChartFS(m.Module("m")), "charts/helm_lib/templates/_h.tpl")
			if err != nil || !strings.Contains(string(b), "from-lib") {
				t.Fatalf("the chart's library through the alias: %q, %v", b, err)
			}
		})
	}
}

// A hook, a hooks directory or an enabled script reached through the
// alias runs as its real file beneath the tree's root: exec'd by the link's
// path, the kernel would follow /deckhouse/... on the host, not the file
// the loader hashed (docs/security.md, "Reading a tree").
func TestTreeRootAliasExecPaths(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "repo")
	writeFile(t, filepath.Join(root, "shell_lib/hook.sh"), "#!/bin/sh\necho lib\n", 0o755)
	writeFile(t, filepath.Join(root, "shell_lib/enabled"), "#!/bin/sh\necho true > $MODULE_ENABLED_RESULT\n", 0o755)
	writeFile(t, filepath.Join(root, "shared/hooks/b.sh"), "#!/bin/sh\necho b\n", 0o755)
	writeFile(t, filepath.Join(root, "modules/values.yaml"), "global: {}\n", 0o644)
	writeFile(t, filepath.Join(root, "modules/001-a/hooks/own.sh"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(root, "modules/002-b/Chart.yaml"), "apiVersion: v2\nname: b\nversion: 0.1.0\n", 0o644)
	writeFile(t, filepath.Join(root, "modules/003-c/hooks/own.sh"), "#!/bin/sh\n", 0o755)
	for link, target := range map[string]string{
		"modules/001-a/hooks/lib.sh": "/deckhouse/shell_lib/hook.sh",
		"modules/001-a/enabled":      "/deckhouse/shell_lib/enabled",
		"modules/002-b/hooks":        "/deckhouse/shared/hooks",
		"top":                        "/deckhouse", // the alias itself is the root
		"modules/003-c/hooks/rel.sh": "../../../top/shell_lib/hook.sh",
		// a relative link inside the tree: the kernel follows it as os.Root did
		"modules/003-c/hooks/in.sh": "../../../shell_lib/hook.sh",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	l := New(WithLogger(quietLogger()), WithHookConfigs(false), WithTreeRootAlias("/deckhouse"))
	m, err := l.Load(t.Context(), root, filepath.Join(root, "modules"), filepath.Join(root, "global-hooks"))
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string][2]string{} // hook name: Path, WorkingDir
	for _, mod := range m.Modules {
		for _, h := range mod.Hooks {
			paths[h.Name] = [2]string{h.Path, h.WorkingDir}
		}
	}
	in := func(p string) string { return filepath.Join(root, p) }
	want := map[string][2]string{
		"001-a/hooks/lib.sh": {in("shell_lib/hook.sh"), in("modules/001-a/hooks")},
		"001-a/hooks/own.sh": {in("modules/001-a/hooks/own.sh"), in("modules/001-a/hooks")},
		"002-b/hooks/b.sh":   {in("shared/hooks/b.sh"), in("shared/hooks")},
		"003-c/hooks/in.sh":  {in("modules/003-c/hooks/in.sh"), in("modules/003-c/hooks")},
		"003-c/hooks/own.sh": {in("modules/003-c/hooks/own.sh"), in("modules/003-c/hooks")},
		"003-c/hooks/rel.sh": {in("shell_lib/hook.sh"), in("modules/003-c/hooks")},
	}
	if !maps.Equal(paths, want) {
		t.Fatalf("hook paths, working dirs:\n got %v\nwant %v", paths, want)
	}
	if got := m.Module("a").EnabledScript; got != in("shell_lib/enabled") {
		t.Fatalf("enabled script = %s, want %s", got, in("shell_lib/enabled"))
	}
	// what runs is the hashed file, by a path the host resolves inside the tree
	for _, h := range m.Module("a").Hooks {
		out, err := exec.Command(h.Path).Output()
		if err != nil {
			t.Fatalf("%s: %v", h.Name, err)
		}
		if h.Name == "001-a/hooks/lib.sh" && string(out) != "lib\n" {
			t.Fatalf("%s printed %q", h.Name, out)
		}
	}
}

// A hook run through the alias that fails is named by its file in the
// module, the one the user looks for, not by the shared file that ran.
func TestTreeRootAliasHookErrorNamesTheLink(t *testing.T) {
	root := filepath.Join(t.TempDir(), "repo")
	writeFile(t, filepath.Join(root, "shell_lib/bad.sh"), "#!/bin/sh\necho broken >&2\nexit 3\n", 0o755)
	writeFile(t, filepath.Join(root, "modules/values.yaml"), "global: {}\n", 0o644)
	if err := os.MkdirAll(filepath.Join(root, "modules/001-a/hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/deckhouse/shell_lib/bad.sh", filepath.Join(root, "modules/001-a/hooks/bad.sh")); err != nil {
		t.Fatal(err)
	}
	l := New(WithLogger(quietLogger()), WithTreeRootAlias("/deckhouse"))
	_, err := l.Load(t.Context(), root, filepath.Join(root, "modules"), filepath.Join(root, "global-hooks"))
	if err == nil || !strings.Contains(err.Error(), filepath.Join(root, "modules/001-a/hooks/bad.sh")+":") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("err = %v, want the module's hooks/bad.sh named and its exit status", err)
	}
}
