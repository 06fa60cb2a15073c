package gitsync

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRefusedRevisionsKeepTheCurrentOne(t *testing.T) {
	f := newFixture(t)
	s := f.syncer(t, "file://"+f.repo.Bare, "main", Auth{})
	first, _, err := s.Sync(t.Context())
	must(t, err)

	refuse := func(name string, change func(), want string) {
		t.Helper()
		change()
		f.commit(t, name, nil)
		_, changed, err := s.Sync(t.Context())
		if err == nil || changed || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: changed = %v, err = %v; want %q", name, changed, err, want)
		}
		if cur := s.Current(); cur.Commit != first.Commit {
			t.Fatalf("%s: current moved to %s", name, cur.Commit)
		}
		if target, _ := os.Readlink(s.CurrentDir()); !strings.HasSuffix(target, first.Commit) {
			t.Fatalf("%s: current link = %s", name, target)
		}
		if s.Status().LastError == "" {
			t.Fatalf("%s: error not reported", name)
		}
	}
	refuse("symlink out", func() {
		must(t, os.Symlink("../../../../etc/passwd", filepath.Join(f.repo.Dir, "modules/passwd")))
	}, "leads out of the checkout")
	must(t, f.repo.Remove("modules/passwd"))

	s.opts.Validate = func(_ context.Context, dir string) (any, error) {
		b, _ := os.ReadFile(filepath.Join(dir, "modules/values.yaml"))
		if strings.Contains(string(b), "[") {
			return nil, errors.New("modules/values.yaml: bad YAML")
		}
		return nil, nil
	}
	refuse("bad yaml", func() { must(t, f.repo.WriteFile("modules/values.yaml", "global: [\n", 0)) }, "bad YAML")
	refuse("no modules dir", func() { must(t, f.repo.Remove("modules")) }, "has no modules")

	// with the checkout limited to modules/, an escaping link elsewhere is not checked out
	limited, err := New(Options[any]{URL: "file://" + f.repo.Bare, Ref: "main", CheckoutDir: filepath.Join(t.TempDir(), "c"),
		Paths: []string{"modules"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	must(t, os.Symlink("/etc/passwd", filepath.Join(f.repo.Dir, "outside-link")))
	f.commit(t, "link outside modules/", map[string]string{"modules/values.yaml": "global: {v: 8}\n"})
	if _, _, err := limited.Sync(t.Context()); err != nil {
		t.Fatalf("a link outside the checked-out paths refused the revision: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(limited.CurrentDir(), "outside-link")); err == nil {
		t.Fatal("a path outside Paths was checked out")
	}
	must(t, f.repo.Remove("outside-link"))

	// the next good commit is picked up
	good := f.commit(t, "fixed", map[string]string{"modules/values.yaml": "global: {v: 9}\n"})
	rev, changed, err := s.Sync(t.Context())
	if err != nil || !changed || rev.Commit != good {
		t.Fatalf("fixed: %+v, %v, %v", rev, changed, err)
	}
}
