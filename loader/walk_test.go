package loader

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A module tree pulled from git holds what an image build strips: Go
// sources and tests of compiled hooks (executable in git), testdata/,
// docs, libraries. Discovery takes none of them for a hook, in a module's
// hooks/ and in the global hooks directory alike (docs/operator.md, "Which
// files are hooks").
func TestHookDiscoveryLeavesOutWhatIsNotAHook(t *testing.T) {
	layout := map[string]os.FileMode{
		"run.sh":                    0o755, // a hook
		"sub/nested":                0o755, // a hook, no extension
		"plain.sh":                  0o644, // not executable: skipped with a warning
		"main.go":                   0o755,
		"hook_test.go":              0o755,
		"testdata/fixture.sh":       0o755,
		"sub/testdata/deep/x.sh":    0o755,
		"lib/functions.sh":          0o755,
		"README.md":                 0o755,
		"notes.txt":                 0o755,
		"config.yaml":               0o755,
		"config.json":               0o755,
		".hidden.sh":                0o755,
		".git-hooks/pre-commit":     0o755,
		"sub/.cache/generated-hook": 0o755,
	}
	for _, tt := range []struct {
		name, hooksDir, prefix string
		global                 bool
	}{
		{name: "module", hooksDir: "modules/001-m/hooks", prefix: "001-m/hooks/"},
		{name: "global", hooksDir: "global-hooks", global: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "modules/001-m"), 0o755); err != nil {
				t.Fatal(err)
			}
			for p, mode := range layout {
				full := filepath.Join(dir, tt.hooksDir, p)
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte("#!/bin/sh\nexit 1\n"), mode); err != nil {
					t.Fatal(err)
				}
			}
			// a link to an empty directory git cannot hold, as in
			// Deckhouse's global-hooks/.../testdata: recorded, not refused
			symlink(t, "../source/empty", filepath.Join(dir, tt.hooksDir, "sub/testdata/links/empty"))
			m, err := New(WithHookConfigs(false)).Load(t.Context(), dir, filepath.Join(dir, "modules"), filepath.Join(dir, "global-hooks"))
			if err != nil {
				t.Fatal(err)
			}
			hooks := m.Module("m").Hooks
			if tt.global {
				hooks = m.Global.Hooks
			}
			var names []string
			for _, h := range hooks {
				names = append(names, h.Name)
			}
			if want := []string{tt.prefix + "run.sh", tt.prefix + "sub/nested"}; !reflect.DeepEqual(names, want) {
				t.Fatalf("hooks = %q, want %q", names, want)
			}
			if w := strings.Join(m.Warnings, "\n"); !strings.Contains(w, "plain.sh: looks like a hook but is not executable") || strings.Count(w, "looks like a hook") != 1 {
				t.Fatalf("warnings = %q", m.Warnings)
			}
		})
	}
}
