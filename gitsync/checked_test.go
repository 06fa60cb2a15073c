package gitsync

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// checked is what a test's Validate makes of a revision.
type checked struct{ dir string }

// What Validate returns rides on the revision, typed: from a sync, from a
// sync that found nothing new (the current one's), from the poll loop and
// from a restore (docs/architecture.md, "gitsync"); without Validate, the
// model is T's zero value.
func TestCheckedRidesOnTheRevision(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	validations := atomic.Int32{}
	opts := Options[*checked]{URL: "file://" + f.repo.Bare, Ref: "main", CheckoutDir: filepath.Join(t.TempDir(), "c"),
		Require: []string{"modules"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Validate: func(_ context.Context, dir string) (*checked, error) {
			validations.Add(1)
			return &checked{dir}, nil
		}}
	s, err := New(opts)
	must(t, err)
	want := func(how string, rev *Checked[*checked]) {
		t.Helper()
		if rev == nil || rev.Model == nil || rev.Model.dir != rev.Dir {
			t.Fatalf("%s: %+v, want what Validate returned for its Dir", how, rev)
		}
	}
	rev, _, err := s.Sync(t.Context())
	must(t, err)
	want("synced", rev)
	again, changed, err := s.Sync(t.Context())
	must(t, err)
	if changed || again.Model != rev.Model || validations.Load() != 1 {
		t.Fatalf("synced again: changed %v, model %p (want %p), %d validations (want 1)", changed, again.Model, rev.Model, validations.Load())
	}

	// the poll loop hands each new revision over with its model
	f.commit(t, "next", map[string]string{"modules/values.yaml": "global: {v: 9}\n"})
	published := make(chan *Checked[*checked], 1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx, time.Hour, func(c *Checked[*checked]) { published <- c }) }()
	select {
	case c := <-published:
		want("published", c)
		if c.Commit == rev.Commit {
			t.Fatalf("published %s again", c.Commit)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the poll loop published nothing")
	}
	cancel()
	<-done
	if st := s.Status(); st.Current == nil || st.Current.Commit == rev.Commit {
		t.Fatalf("status: current %+v, want the new revision", st.Current)
	}

	restarted, err := New(opts)
	must(t, err)
	want("restored", restarted.Restore(t.Context()))

	opts.Validate, opts.CheckoutDir = nil, filepath.Join(t.TempDir(), "c2")
	plain, err := New(opts)
	must(t, err)
	rev, _, err = plain.Sync(t.Context())
	must(t, err)
	if rev.Model != nil {
		t.Fatalf("without Validate: model %+v, want none", rev.Model)
	}
}
