package gitsync

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"
)

// Revision.Tree is equal for two commits whose checkouts are equal (a
// revert), different otherwise, and survives a restart's Restore: the
// fleet gate tells a rollback by it (docs/operator.md, "Fleets").
func TestRevisionTree(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(t.TempDir(), "checkout")
	s, err := New(Options[any]{URL: "file://" + f.repo.Bare, Ref: "main", CheckoutDir: dir, Paths: []string{"modules"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	first, _, err := s.Sync(t.Context())
	must(t, err)
	f.commit(t, "change", map[string]string{"modules/values.yaml": "global: {v: changed}\n"})
	changed, _, err := s.Sync(t.Context())
	must(t, err)
	f.commit(t, "revert", map[string]string{"modules/values.yaml": "global: {v: 2}\n"})
	reverted, _, err := s.Sync(t.Context())
	must(t, err)
	// outside Paths ("modules"): the same checkout
	f.commit(t, "docs", map[string]string{"README.md": "hello\n"})
	docs, _, err := s.Sync(t.Context())
	must(t, err)
	if first.Tree == "" || first.Tree == changed.Tree {
		t.Fatalf("tree of first %q, of changed %q: want set and different", first.Tree, changed.Tree)
	}
	if reverted.Commit == first.Commit || reverted.Tree != first.Tree {
		t.Fatalf("a revert's tree %q, want the first's %q", reverted.Tree, first.Tree)
	}
	if docs.Tree != reverted.Tree {
		t.Fatalf("a commit outside the checked-out paths changed the tree: %q, want %q", docs.Tree, reverted.Tree)
	}
	if h := s.Status().History; len(h) < 3 || h[2].Tree != changed.Tree {
		t.Fatalf("history does not keep trees: %+v", h)
	}
	s2, err := New(Options[any]{URL: "file://" + f.repo.Bare, Ref: "main", CheckoutDir: dir, Paths: []string{"modules"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	restored := s2.Restore(t.Context())
	if restored == nil || restored.Tree != docs.Tree {
		t.Fatalf("restored %+v, want tree %q", restored, docs.Tree)
	}
	// the history published before the restart stays, trees included:
	// a revert to changed's content after a restart is still a rollback
	h := s2.Status().History
	if len(h) != 4 || h[0].Commit != docs.Commit || h[2].Commit != changed.Commit || h[2].Tree != changed.Tree {
		t.Fatalf("history after a restart: %+v, want the 4 revisions published before it, newest first", h)
	}
	f.commit(t, "again", map[string]string{"modules/values.yaml": "global: {v: changed}\n"})
	if _, _, err := s2.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if h := s2.Status().History; len(h) != 5 || h[3].Commit != changed.Commit {
		t.Fatalf("history after a restart and a publish: %+v, want 5 revisions", h)
	}
	s3, err := New(Options[any]{URL: "file://" + f.repo.Bare, Ref: "main", CheckoutDir: dir, Paths: []string{"modules"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	s3.Restore(t.Context())
	if h := s3.Status().History; len(h) != 5 {
		t.Fatalf("history.json after a restart and a publish keeps %d revisions, want 5", len(h))
	}
}
