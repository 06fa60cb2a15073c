package commitstatus

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/addonops/addon-operator/internal/forgetest"
)

// One read per TTL for a commit, whoever asks and however many at once;
// an error is kept as long, or as long as the forge asks.
func TestReadCache(t *testing.T) {
	forge := forgetest.New("tok")
	defer forge.Close()
	forge.Inject(forgetest.Status{API: "github", Repo: "fleet/addons", Commit: sha, State: "success", Context: "addon-operator/canary", Description: "[ring 0] healthy on canary"})
	clock := newManualClock()
	c := NewReadCache(readers(t, forge, "tok")["github"], ReadCacheOptions{TTL: time.Minute, Now: clock.Now})
	read := func() ([]Posted, error) { return c.Statuses(context.Background(), sha) }

	// the gates of every ring in one poll, at once
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if got, err := read(); err != nil || len(got) != 1 {
				t.Errorf("read %v, %v", got, err)
			}
		})
	}
	wg.Wait()
	if n := forge.Reads(); n != 1 {
		t.Fatalf("20 asks took %d reads, want 1", n)
	}
	clock.Advance(59 * time.Second)
	if _, err := read(); err != nil || forge.Reads() != 1 {
		t.Fatalf("within the TTL: err %v, %d reads", err, forge.Reads())
	}
	clock.Advance(time.Second)
	if _, err := read(); err != nil || forge.Reads() != 2 {
		t.Fatalf("after the TTL: err %v, %d reads", err, forge.Reads())
	}
	// another commit is read on its own
	if _, err := c.Statuses(context.Background(), commit(2)); err != nil || forge.Reads() != 3 {
		t.Fatalf("another commit: err %v, %d reads", err, forge.Reads())
	}

	// a rate limit: no read until the forge's Retry-After, past the TTL
	clock.Advance(time.Minute)
	forge.Fail(forgetest.Failure{Code: 429, RetryAfter: "300", Body: "slow down"})
	_, err := read()
	var re *ReadError
	if !errors.As(err, &re) || !re.RetryAt.Equal(clock.Now().Add(5*time.Minute)) {
		t.Fatalf("err = %v, want a ReadError until 5 minutes on", err)
	}
	if !strings.Contains(err.Error(), "the forge rate-limits reads (HTTP 429: slow down)") {
		t.Fatalf("reason %q", err)
	}
	clock.Advance(4 * time.Minute)
	first := err.Error()
	if _, err := read(); !errors.As(err, &re) || forge.Reads() != 4 {
		t.Fatalf("before Retry-After: err %v, %d reads", err, forge.Reads())
	} else if err.Error() != first || strings.Contains(first, "2026-") {
		// the reason is posted on the commit: the same words at each
		// poll, so no retry time in it
		t.Fatalf("the reason moves between polls: %q, then %q", first, err)
	}
	clock.Advance(time.Minute)
	if _, err := read(); err != nil || forge.Reads() != 5 {
		t.Fatalf("after Retry-After: err %v, %d reads", err, forge.Reads())
	}

	// a 5xx: kept for the TTL
	clock.Advance(time.Minute)
	forge.Fail(forgetest.Failure{Code: 502, Body: "bad gateway"})
	if _, err := read(); err == nil || !strings.Contains(err.Error(), "HTTP 502: bad gateway") {
		t.Fatalf("502: err = %v", err)
	}
	// an asker that gives up leaves nothing behind
	clock.Advance(time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Statuses(ctx, sha); err == nil {
		t.Fatal("a cancelled read answered")
	}
	if got, err := read(); err != nil || len(got) != 1 {
		t.Fatalf("after a cancelled read: %v, %v", got, err)
	}
}

// The cache remembers a bounded number of commits.
func TestReadCacheBounded(t *testing.T) {
	forge := forgetest.New("tok")
	defer forge.Close()
	c := NewReadCache(readers(t, forge, "tok")["gitlab"], ReadCacheOptions{Now: newManualClock().Now})
	for i := range maxCachedCommits * 2 {
		if _, err := c.Statuses(context.Background(), commit(i)); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.entries) != maxCachedCommits || len(c.order) != maxCachedCommits {
		t.Fatalf("%d entries, %d in order", len(c.entries), len(c.order))
	}
}
