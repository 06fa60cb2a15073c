package gitsync

import (
	"context"
	"testing"
)

// What Validate returns rides on the revision, opaque, from a sync and
// from a restore (docs/architecture.md, "gitsync").
func TestCheckedRidesOnTheRevision(t *testing.T) {
	f := newFixture(t)
	s := f.syncer(t, "file://"+f.repo.Bare, "main", Auth{})
	type checked struct{ dir string }
	s.opts.Validate = func(_ context.Context, dir string) (any, error) { return &checked{dir}, nil }
	rev, _, err := s.Sync(t.Context())
	must(t, err)
	if c, ok := rev.Checked.(*checked); !ok || c.dir != rev.Dir {
		t.Fatalf("synced: Checked = %#v, want what Validate returned for %s", rev.Checked, rev.Dir)
	}
	opts := s.opts
	restarted, err := New(opts)
	must(t, err)
	back := restarted.Restore(t.Context())
	if back == nil {
		t.Fatal("nothing restored")
	}
	if c, ok := back.Checked.(*checked); !ok || c.dir != back.Dir {
		t.Fatalf("restored: Checked = %#v, want what Validate returned for %s", back.Checked, back.Dir)
	}
}
