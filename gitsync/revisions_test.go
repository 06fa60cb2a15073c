package gitsync

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
)

// The revisions the running model uses (Options.InUse) stay on disk
// however many revisions are published after them; others go.
func TestRevisionsPinnedWhileInUse(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	var inUse []string
	s, err := New(Options[any]{URL: "file://" + f.repo.Bare, Ref: "main", CheckoutDir: filepath.Join(t.TempDir(), "c"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		InUse:  func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(inUse) }})
	must(t, err)
	running, _, err := s.Sync(t.Context())
	must(t, err)
	mu.Lock()
	inUse = []string{running.Commit}
	mu.Unlock()
	var published []string
	for i := range 3 {
		f.commit(t, fmt.Sprint("publish ", i), map[string]string{"modules/values.yaml": fmt.Sprintf("global: {v: p%d}\n", i)})
		rev, _, err := s.Sync(t.Context())
		must(t, err)
		published = append(published, rev.Commit)
	}
	s.revisions.wait()
	exists := func(c string) bool {
		_, err := os.Stat(filepath.Join(s.opts.CheckoutDir, "revisions", c, "modules", "values.yaml"))
		return err == nil
	}
	if !exists(running.Commit) {
		t.Fatal("the running revision's files were removed")
	}
	if exists(published[0]) || !exists(published[1]) || !exists(published[2]) {
		t.Fatalf("kept: first %v, previous %v, current %v", exists(published[0]), exists(published[1]), exists(published[2]))
	}
	mu.Lock()
	inUse = nil
	mu.Unlock()
	f.commit(t, "one more", map[string]string{"modules/values.yaml": "global: {v: last}\n"})
	_, _, err = s.Sync(t.Context())
	must(t, err)
	s.revisions.wait()
	if exists(running.Commit) {
		t.Fatal("a revision no longer in use stayed")
	}
}

// Each revision written from the previous one equals a full checkout:
// changed files rewritten, unchanged linked, removed directories gone. A
// new Syncer on the same directory resumes from the current revision.
func TestIncrementalCheckout(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(t.TempDir(), "checkout")
	open := func() *Syncer[any] {
		s, err := New(Options[any]{URL: "file://" + f.repo.Bare, Ref: "main", CheckoutDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		must(t, err)
		return s
	}
	s := open()
	_, _, err := s.Sync(t.Context())
	must(t, err)
	f.commit(t, "add two", map[string]string{"modules/002-two/values.yaml": "two: {}\n", "modules/values.yaml": "global: {v: changed}\n"})
	_, _, err = s.Sync(t.Context())
	must(t, err)

	// a restarted syncer picks up where the last one left off
	s = open()
	if cur := s.Restore(t.Context()); cur == nil || cur.Subject != "add two" || s.Current().Commit != cur.Commit {
		t.Fatalf("restored current = %+v", cur)
	}
	_, changed, err := s.Sync(t.Context())
	if err != nil || changed {
		t.Fatalf("first poll after a restart: changed = %v, err = %v", changed, err)
	}
	want := f.commit(t, "remove one", map[string]string{"modules/002-two/values.yaml": "two: {x: 1}\n"}, "modules/001-one")
	rev, _, err := s.Sync(t.Context())
	must(t, err)
	if rev.Commit != want {
		t.Fatalf("rev = %s", rev.Commit)
	}
	if _, err := os.Stat(filepath.Join(rev.Dir, "modules/001-one")); !os.IsNotExist(err) {
		t.Fatalf("a removed module directory is still there: %v", err)
	}
	for p, wantContent := range map[string]string{
		"modules/values.yaml":         "global: {v: changed}\n",
		"modules/002-two/values.yaml": "two: {x: 1}\n",
	} {
		b, err := os.ReadFile(filepath.Join(rev.Dir, p))
		if err != nil || string(b) != wantContent {
			t.Fatalf("%s = %q, %v", p, b, err)
		}
	}
}

// A revision built from the previous one equals a full checkout of the
// same commit, whatever changed: contents, modes, symlinks, a file that
// became a directory, removed directories, paths outside Paths; and
// unchanged files are hard links to the previous revision's.
func TestIncrementalEqualsFullCheckout(t *testing.T) {
	f := newFixture(t)
	opts := func(dir string) Options[any] {
		return Options[any]{URL: "file://" + f.repo.Bare, Ref: "main", CheckoutDir: dir, Paths: []string{"modules", "global-hooks"},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	}
	kept, err := New(opts(filepath.Join(t.TempDir(), "kept")))
	must(t, err)
	step := func(t *testing.T, change func()) *Checked[any] {
		t.Helper()
		change()
		_, err := f.repo.Commit("step")
		must(t, err)
		must(t, f.repo.Push())
		rev, _, err := kept.Sync(t.Context())
		must(t, err)
		full, err := New(opts(filepath.Join(t.TempDir(), "full")))
		must(t, err)
		fullRev, _, err := full.Sync(t.Context())
		must(t, err)
		if got, want := listing(t, rev.Dir), listing(t, fullRev.Dir); !reflect.DeepEqual(got, want) {
			t.Fatalf("incremental checkout differs from a full one:\n got %v\nwant %v", got, want)
		}
		return rev
	}
	write := func(p, c string, mode os.FileMode) { must(t, f.repo.WriteFile(p, c, mode)) }
	step(t, func() {
		write("modules/001-a/hooks/h.sh", "#!/bin/sh\n", 0o755)
		write("modules/001-a/values.yaml", "a: {}\n", 0)
		write("modules/002-b/templates/t.yaml", "kind: X\n", 0)
		write("global-hooks/g.sh", "#!/bin/sh\n", 0o755)
		write("docs/outside.md", "not checked out\n", 0)
	})
	prev := step(t, func() {
		must(t, os.Symlink("../001-a/values.yaml", filepath.Join(f.repo.Dir, "modules/002-b/values.yaml")))
		write("modules/001-a/hooks/h.sh", "#!/bin/sh\n", 0o644) // only the mode changes
		write("docs/outside.md", "changed outside\n", 0)
	})
	rev := step(t, func() {
		must(t, f.repo.Remove("modules/001-a/values.yaml"))
		write("modules/001-a/values.yaml/now-a-dir.yaml", "x: 1\n", 0)
		must(t, f.repo.Remove("modules/002-b/values.yaml"))
		must(t, f.repo.Remove("global-hooks"))
		write("modules/003-c/values.yaml", "c: {}\n", 0)
	})
	a, err := os.Stat(filepath.Join(prev.Dir, "modules/002-b/templates/t.yaml"))
	must(t, err)
	b, err := os.Stat(filepath.Join(rev.Dir, "modules/002-b/templates/t.yaml"))
	must(t, err)
	if !os.SameFile(a, b) {
		t.Fatal("an unchanged file was written again instead of linked")
	}
}
