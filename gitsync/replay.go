package gitsync

import (
	"net/http"
	"sync"
	"time"
)

// deliveryHeaders name a webhook delivery, per forge. A redelivery keeps
// its ID, so a delivery seen before is one replayed.
var deliveryHeaders = []string{"X-GitHub-Delivery", "X-Gitea-Delivery", "X-Gogs-Delivery", "X-Gitlab-Event-UUID"}

const (
	// replayWindow: how long a delivery ID is remembered; replayMax: how
	// many at most (the oldest go first), so the memory is bounded.
	replayWindow = 24 * time.Hour
	replayMax    = 10000
)

// replayGuard remembers the signed deliveries' IDs for replayWindow. The
// IDs are not signed (the HMAC covers the body only): the guard refuses a
// delivery sent again as it was, such as a replay of a captured request
// or a forge's redelivery; one whose ID was changed is still only a sync
// (docs/git.md, "Webhook").
type replayGuard struct {
	now func() time.Time

	mu    sync.Mutex
	seen  map[string]time.Time
	order []string // IDs by first sight, oldest first
}

func newReplayGuard(now func() time.Time) *replayGuard {
	return &replayGuard{now: now, seen: map[string]time.Time{}}
}

// fresh reports whether the request's delivery ID (if it has one) was not
// seen in the window, and remembers it.
func (g *replayGuard) fresh(r *http.Request) bool {
	var id string
	for _, h := range deliveryHeaders {
		if v := r.Header.Get(h); v != "" {
			id = h + ":" + v
			break
		}
	}
	if id == "" {
		return true
	}
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.forget(now)
	if _, ok := g.seen[id]; ok {
		return false
	}
	g.seen[id] = now
	g.order = append(g.order, id)
	return true
}

// forget drops the IDs older than the window, and the oldest beyond replayMax.
func (g *replayGuard) forget(now time.Time) {
	n := 0
	for n < len(g.order) && (now.Sub(g.seen[g.order[n]]) >= replayWindow || len(g.order)-n >= replayMax) {
		delete(g.seen, g.order[n])
		n++
	}
	g.order = g.order[n:]
}
