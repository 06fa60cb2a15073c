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

// TestGateHoldsThenPublishes: a held revision is fetched and checked but
// not published (nor recorded in history, so a restart runs the one
// before); while the ref stays, the gate is asked again without fetching;
// once the gate lets it through it is validated again and published.
func TestGateHoldsThenPublishes(t *testing.T) {
	f := newFixture(t)
	var suspended atomic.Bool
	since := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	validated := 0
	s, err := New(Options[any]{URL: f.http.URL("addons"), Ref: "main", CheckoutDir: filepath.Join(t.TempDir(), "checkout"),
		Auth: Auth{Username: "alice", PasswordFile: f.passFile}, Require: []string{"modules"},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Validate: func(context.Context, string) (any, error) { validated++; return nil, nil },
		Gate: func(Revision) []Hold {
			if suspended.Load() {
				return []Hold{{By: "suspend", Reason: "release freeze", Since: since}, {By: "ring"}}
			}
			return nil
		}})
	must(t, err)
	// the first revision is never held: it is what the operator starts on
	suspended.Store(true)
	rev, _, err := s.Sync(t.Context())
	must(t, err)
	if rev.Commit != f.c2 {
		t.Fatalf("first revision %s, want %s", rev.Commit, f.c2)
	}

	c4 := f.commit(t, "fourth", map[string]string{"modules/values.yaml": "global: {v: 4}\n"})
	rev, changed, err := s.Sync(t.Context())
	must(t, err)
	st := s.Status()
	if changed || rev.Commit != f.c2 || st.Current.Commit != f.c2 {
		t.Fatalf("held: changed %v, current %s, want %s", changed, st.Current.Commit, f.c2)
	}
	if st.Pending == nil || st.Pending.Commit != c4 || len(st.Held) != 2 || st.Held[0].By != "suspend" ||
		!st.Held[0].Since.Equal(since) || st.Held[0].Commit != c4 || st.Held[1].Since.IsZero() {
		t.Fatalf("held status: pending %+v, held %+v", st.Pending, st.Held)
	}
	if h := s.history.read(); len(h) != 1 || h[0].Commit != f.c2 {
		t.Fatalf("history on disk %+v: a restart must run %s", h, f.c2)
	}
	ringSince := st.Held[1].Since

	// held still: one listing, no fetch, no check, the gate's since kept
	uploads, checks := f.http.UploadPackRequests(), validated
	_, changed, err = s.Sync(t.Context())
	must(t, err)
	if changed || f.http.UploadPackRequests() != uploads || validated != checks {
		t.Fatalf("held again: changed %v, upload-packs %d→%d, validations %d→%d", changed, uploads, f.http.UploadPackRequests(), checks, validated)
	}
	if st := s.Status(); len(st.Held) != 2 || !st.Held[1].Since.Equal(ringSince) {
		t.Fatalf("held again: %+v", st.Held)
	}

	// resumed: validated once more, published
	suspended.Store(false)
	rev, changed, err = s.Sync(t.Context())
	must(t, err)
	if !changed || rev.Commit != c4 || validated != checks+1 {
		t.Fatalf("resumed: changed %v, %s, validations %d", changed, rev.Commit, validated-checks)
	}
	if st := s.Status(); st.Pending != nil || st.Held != nil || st.Current.Commit != c4 {
		t.Fatalf("resumed status: %+v", st)
	}
}

// TestSyncNowWaitsForAFreshSync: SyncNow returns once a sync that started
// after it was asked has ended, with that sync's outcome.
func TestSyncNowWaitsForAFreshSync(t *testing.T) {
	f := newFixture(t)
	s := f.syncer(t, f.http.URL("addons"), "main", Auth{Username: "alice", PasswordFile: f.passFile})
	never := make(chan time.Time)
	s.opts.After = func(time.Duration) <-chan time.Time { return never } // no poll: only triggers
	published := make(chan string, 4)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { s.Run(ctx, time.Hour, func(r *Checked[any]) { published <- r.Commit }); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	must(t, SyncNow(t.Context(), s))
	c4 := f.commit(t, "fourth", map[string]string{"modules/values.yaml": "global: {v: 4}\n"})
	must(t, SyncNow(t.Context(), s))
	if cur := s.Current(); cur == nil || cur.Commit != c4 {
		t.Fatalf("after SyncNow: current %+v, want %s", cur, c4)
	}
	stopped, cancelWait := context.WithCancel(t.Context())
	cancelWait()
	if err := SyncNow(stopped, s); err == nil {
		t.Fatal("SyncNow with a done context: no error")
	}
}
