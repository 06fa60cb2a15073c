package gitsync

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// First runs the newest revision on disk at once, else the remote's,
// retried with backoff (1s doubling, at most maxWait) until one comes or
// ctx ends; each failure is told to onRetry.
func TestFirst(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	// a checkout that holds f.c2, the remote's main when it was synced
	synced := filepath.Join(t.TempDir(), "synced")
	s, err := New(Options[string]{URL: "file://" + f.repo.Bare, Ref: "main", CheckoutDir: synced, Logger: quiet})
	must(t, err)
	_, _, err = s.Sync(t.Context())
	must(t, err)

	for _, tt := range []struct {
		name string
		// dir: the checkout ("": a new one); appear: the retry after
		// which the remote exists (0: it exists from the start; -1: never)
		dir    string
		appear int
		cancel int // the retry after which ctx ends (0: never)
		waits  []time.Duration
		want   string // the commit First returns ("": an error)
	}{
		{name: "the revision on disk, the remote gone", dir: synced, appear: -1, want: f.c2},
		{name: "the remote's", want: f.c2},
		{name: "the remote after two failures", appear: 2, waits: []time.Duration{time.Second, 2 * time.Second}, want: f.c2},
		{name: "backoff up to maxWait until ctx ends", appear: -1, cancel: 7,
			waits: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second, 10 * time.Second}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			remote := filepath.Join(t.TempDir(), "remote.git")
			if tt.appear == 0 {
				must(t, os.Symlink(f.repo.Bare, remote))
			}
			dir := tt.dir
			if dir == "" {
				dir = filepath.Join(t.TempDir(), "c")
			}
			var mu sync.Mutex
			var waits []time.Duration
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			now := make(chan time.Time)
			close(now)
			s, err := New(Options[string]{URL: "file://" + remote, Ref: "main", CheckoutDir: dir, Logger: quiet,
				Validate: func(_ context.Context, dir string) (string, error) { return dir, nil },
				After: func(d time.Duration) <-chan time.Time {
					mu.Lock()
					defer mu.Unlock()
					waits = append(waits, d)
					if ctx.Err() != nil {
						return nil // as a timer that has not fired: ctx's end wins
					}
					return now
				}})
			must(t, err)
			retries := 0
			rev, err := First(ctx, s, 10*time.Second, func(err error, wait time.Duration) {
				retries++
				if err == nil || wait <= 0 {
					t.Errorf("retry %d: told %v, %s", retries, err, wait)
				}
				if retries == tt.appear {
					must(t, os.Symlink(f.repo.Bare, remote))
				}
				if retries == tt.cancel || retries == 20 { // 20: a bound, should First never stop
					cancel()
				}
			})
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(waits, tt.waits) || retries != len(tt.waits) {
				t.Fatalf("waited %v after %d retries, want %v", waits, retries, tt.waits)
			}
			if tt.want == "" {
				if !errors.Is(err, context.Canceled) || rev != nil {
					t.Fatalf("First = %+v, %v; want ctx's error", rev, err)
				}
				return
			}
			must(t, err)
			if rev.Commit != tt.want || rev.Model != rev.Dir {
				t.Fatalf("First = %s with %q, want %s with its Dir %s", rev.Commit, rev.Model, tt.want, rev.Dir)
			}
		})
	}
}
