package gitsync

import (
	"context"
	"slices"
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

// held is the newest revision a Gate holds, with the remote hash it came
// from: a sync that finds the ref still there asks the gate again without
// fetching or checking out anything.
type held[T any] struct {
	rev   *Checked[T]
	hash  string
	holds []Hold
}

// gate asks Options.Gate about rev (from hash); it reports whether rev is
// held, and records it as Status.Pending and Status.Held when so.
func (s *Syncer[T]) gate(rev *Checked[T], hash string) bool {
	if s.opts.Gate == nil {
		return false
	}
	holds := s.opts.Gate(rev.Revision)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(holds) == 0 {
		s.held = nil
		s.status.Pending, s.status.Held = nil, nil
		return false
	}
	var before []Hold
	if s.held != nil && s.held.rev.Commit == rev.Commit {
		before = s.held.holds
	}
	now := s.opts.Now()
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
	s.held = &held[T]{rev: rev, hash: hash, holds: holds}
	p := rev.Revision
	s.status.Pending, s.status.Held = &p, slices.Clone(holds)
	return true
}

// release forgets the held revision (a ref moved on, or the sync
// published): Status shows no hold until a gate holds again.
func (s *Syncer[T]) release() {
	s.mu.Lock()
	s.held = nil
	s.status.Pending, s.status.Held = nil, nil
	s.mu.Unlock()
}

// heldFor is the held revision when it came from hash (nil otherwise).
func (s *Syncer[T]) heldFor(hash string) *Checked[T] {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil || s.held.hash != hash {
		return nil
	}
	return s.held.rev
}

// revalidate checks a held revision once more before it is published: the
// ConfigMap it was checked against may have changed while it was held.
func (s *Syncer[T]) revalidate(ctx context.Context, rev *Checked[T]) error {
	if s.opts.Validate == nil {
		return nil
	}
	model, err := s.opts.Validate(ctx, rev.Dir)
	if err != nil {
		return err
	}
	rev.Model = model
	return nil
}
