package gitsync

import (
	"slices"
	"sync"
	"time"
)

// Hold is one reason a fetched and checked revision is not published: the
// operator keeps running its current revision meanwhile (docs/operator.md,
// "Suspend, resume and sync"). By names the holder: "suspend" today;
// "window", "ring", "purge-guard" and "health-wait" are the names the
// other holders use.
type Hold struct {
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
	// Since is when the holder began holding: the gate's, or else when
	// this commit was first held by it.
	Since time.Time `json:"since"`
	// Commit is the revision held.
	Commit string `json:"commit,omitempty"`
}

// Gate is asked about each new revision once it is fetched, checked out
// and validated, and again at each sync while it is held; what it returns
// keeps the revision out (none: publish). A revision restored from disk,
// the one a restart runs, is never gated: it is what ran before.
type Gate func(rev Revision) []Hold

// gatekeeper keeps the newest revision a Gate holds, with the remote hash
// it came from: a sync that finds the ref still there asks the gate again
// without fetching or checking out anything.
type gatekeeper[T any] struct {
	gate Gate
	now  func() time.Time

	mu    sync.Mutex
	rev   *Checked[T] // nil: none held
	hash  string
	holds []Hold
}

// hold asks the gate about rev (from hash) and reports whether it is held;
// a holder's since is kept from an earlier sync that held the same commit.
func (g *gatekeeper[T]) hold(rev *Checked[T], hash string) bool {
	if g.gate == nil {
		return false
	}
	holds := g.gate(rev.Revision)
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(holds) == 0 {
		g.rev, g.hash, g.holds = nil, "", nil
		return false
	}
	var before []Hold
	if g.rev != nil && g.rev.Commit == rev.Commit {
		before = g.holds
	}
	now := g.now()
	holds = slices.Clone(holds)
	for i := range holds {
		holds[i].Commit = rev.Commit
		if !holds[i].Since.IsZero() {
			continue
		}
		holds[i].Since = now
		for _, b := range before {
			if b.By == holds[i].By {
				holds[i].Since = b.Since
			}
		}
	}
	g.rev, g.hash, g.holds = rev, hash, holds
	return true
}

// release forgets the held revision (the ref moved back, was set again,
// or the sync published).
func (g *gatekeeper[T]) release() {
	g.mu.Lock()
	g.rev, g.hash, g.holds = nil, "", nil
	g.mu.Unlock()
}

// heldFor is the held revision when it came from hash (nil otherwise).
func (g *gatekeeper[T]) heldFor(hash string) *Checked[T] {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.rev == nil || g.hash != hash {
		return nil
	}
	return g.rev
}

// status is Status.Pending and Status.Held.
func (g *gatekeeper[T]) status() (*Revision, []Hold) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.rev == nil {
		return nil, nil
	}
	p := g.rev.Revision
	return &p, slices.Clone(g.holds)
}

// OnDisk reports whether an earlier run left published revisions on disk
// for Restore to resume from (an empty checkout: a new pod's emptyDir).
func OnDisk[T any](s *Syncer[T]) bool { return len(s.history.read()) > 0 }
