package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/addonops/addon-operator/internal/gitserver"
)

func TestRenderAndDiff(t *testing.T) {
	root := t.TempDir()
	repo := newRepo(t, root)
	base := merged(moduleFiles("001-alpha", "alpha", "1"), moduleFiles("002-gone", "gone", "g"),
		map[string]string{"modules/values.yaml": "alphaEnabled: true\ngoneEnabled: true\nbetaEnabled: true\n"})
	c1 := commitFiles(t, repo, "base", base)
	c2 := commitFiles(t, repo, "pr", merged(moduleFiles("001-alpha", "alpha", "2"), moduleFiles("003-beta", "beta", "b")), "modules/002-gone")
	repoURL := "file://" + repo.Bare

	var out strings.Builder
	if err := renderCommand([]string{"--repo", repoURL, "--ref", c1}, &out); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "# enabled modules: alpha, gone") || !strings.Contains(s, `v: "1"`) {
		t.Fatalf("render:\n%s", s)
	}

	// ConfigMap values from a file change the rendering
	values := filepath.Join(t.TempDir(), "cm.yaml")
	if err := os.WriteFile(values, []byte("apiVersion: v1\nkind: ConfigMap\ndata:\n  alpha: |\n    v: from-cm\n  goneEnabled: \"false\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := renderCommand([]string{"--repo", repoURL, "--ref", c1, "--values", values}, &out); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "# enabled modules: alpha\n") || !strings.Contains(s, `v: "from-cm"`) {
		t.Fatalf("render with values:\n%s", s)
	}

	out.Reset()
	err := diffCommand([]string{"--repo", repoURL, "--from", c1, "--to", c2}, &out)
	if !errors.Is(err, errDiffFound) {
		t.Fatalf("diff err = %v", err)
	}
	s := out.String()
	for _, want := range []string{"added: beta", "removed: gone", "changed: alpha", `-  v: "1"`, `+  v: "2"`, "+++ beta@" + c2} {
		if !strings.Contains(s, want) {
			t.Errorf("diff output lacks %q:\n%s", want, s)
		}
	}
	out.Reset()
	if err := diffCommand([]string{"--repo", repoURL, "--from", c2, "--to", "main"}, &out); err != nil || !strings.Contains(out.String(), "no differences") {
		t.Fatalf("same tree: %v\n%s", err, out.String())
	}

	// the binary exits 1 on a difference, 0 without, as diff(1) does
	run := func(args ...string) int {
		cmd := exec.Command(binPath, args...)
		_ = cmd.Run()
		return cmd.ProcessState.ExitCode()
	}
	if code := run("diff", "--repo", repoURL, "--from", c1, "--to", c2); code != 1 {
		t.Fatalf("exit code with a diff = %d", code)
	}
	if code := run("diff", "--repo", repoURL, "--from", c2, "--to", c2); code != 0 {
		t.Fatalf("exit code without a diff = %d", code)
	}
	// a working copy against a ref
	work := filepath.Join(repo.Dir, "modules")
	if err := os.WriteFile(filepath.Join(work, "003-beta/values.yaml"), []byte("beta:\n  v: \"edited\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err = diffCommand([]string{"--repo", repoURL, "--from", c2, "--work-tree", repo.Dir}, &out)
	if !errors.Is(err, errDiffFound) || !strings.Contains(out.String(), `+  v: "edited"`) {
		t.Fatalf("working copy diff: %v\n%s", err, out.String())
	}
}

// A preview runs nothing from the previewed tree unless --exec-hooks is
// given: no hook --config, no enabled script; the output says what was not
// evaluated. With --exec-hooks a ref must pass GIT_VERIFY_KEYS_DIR.
func TestPreviewRunsNothingUntrusted(t *testing.T) {
	marks := t.TempDir()
	root := t.TempDir()
	repo := newRepo(t, root)
	files := merged(moduleFiles("001-alpha", "alpha", "1"), map[string]string{
		"modules/values.yaml":          "alphaEnabled: true\n",
		"modules/001-alpha/hooks/h.sh": "#!/bin/sh\ntouch " + filepath.Join(marks, "config") + "\necho '{\"beforeHelm\": 1}'\n",
		"modules/001-alpha/enabled":    "#!/bin/sh\ntouch " + filepath.Join(marks, "enabled") + "\necho false > \"$MODULE_ENABLED_RESULT\"\n",
	})
	c1 := commitFiles(t, repo, "untrusted", files)
	repoURL := "file://" + repo.Bare
	ran := func() []string {
		entries, _ := os.ReadDir(marks)
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}

	var out strings.Builder
	if err := renderCommand([]string{"--repo", repoURL, "--ref", c1}, &out); err != nil {
		t.Fatal(err)
	}
	if r := ran(); len(r) != 0 {
		t.Fatalf("a preview ran code of the tree: %v", r)
	}
	if s := out.String(); !strings.Contains(s, "# enabled modules: alpha") || !strings.Contains(s, "not evaluated: the enabled scripts of alpha") {
		t.Fatalf("render:\n%s", s)
	}

	out.Reset()
	if err := renderCommand([]string{"--repo", repoURL, "--ref", c1, "--exec-hooks"}, &out); err != nil {
		t.Fatal(err)
	}
	if r := ran(); len(r) != 2 || !strings.Contains(out.String(), "# enabled modules: \n") {
		t.Fatalf("with --exec-hooks: ran %v\n%s", r, out.String())
	}

	keys := t.TempDir()
	if _, _, err := gitserver.NewSigningKey(t.TempDir(), "release@example.com", filepath.Join(keys, "release.asc")); err != nil {
		t.Fatal(err)
	}
	err := renderCommand([]string{"--repo", repoURL, "--ref", c1, "--exec-hooks", "--git-verify-keys-dir", keys}, &out)
	if err == nil || !strings.Contains(err.Error(), "not signed") {
		t.Fatalf("an unsigned ref rendered with --exec-hooks and keys: %v", err)
	}
}
