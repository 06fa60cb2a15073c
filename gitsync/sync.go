package gitsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Sync resolves the desired ref and, when it moved, fetches, checks out,
// validates and publishes the new revision. It reports whether a new
// revision was published. On error the current revision stays.
func (s *Syncer[T]) Sync(ctx context.Context) (*Checked[T], bool, error) {
	rev, changed, err := s.sync(ctx)
	s.mu.Lock()
	s.status.LastSync = s.opts.Now()
	s.status.LastError = ""
	if err != nil {
		s.status.LastError = Scrub(err.Error())
	}
	s.mu.Unlock()
	if err != nil {
		return nil, false, fmt.Errorf("sync %s: %w", Scrub(s.opts.URL), scrubErr(err))
	}
	return rev, changed, nil
}

func (s *Syncer[T]) sync(ctx context.Context) (*Checked[T], bool, error) {
	s.mu.Lock()
	ref, resolvedBefore, cur := s.ref, s.resolved, s.current
	s.mu.Unlock()
	var curRev *Revision
	if cur != nil {
		curRev = &cur.Revision
	}
	auth, err := s.opts.Auth.method(s.opts.URL)
	if err != nil {
		return nil, false, err
	}
	netCtx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	var sess transport.UploadPackSession
	var ar *packp.AdvRefs
	if !shaRe.MatchString(ref) {
		if sess, ar, err = s.remote.open(netCtx, auth); err != nil {
			return nil, false, err
		}
		defer sess.Close()
	}
	remoteRef, hash, err := resolve(ar, ref)
	if err != nil {
		return nil, false, err
	}
	if err := s.pin(ref, remoteRef); err != nil {
		return nil, false, err
	}
	if cur != nil && hash == resolvedBefore {
		s.gates.release()      // back where it runs: nothing waits
		return cur, false, nil // one round trip, no objects
	}
	// a revision held at an earlier sync is asked about again without
	// fetching; let through, it is validated again below (the ConfigMap
	// it was checked against may have changed meanwhile)
	rev := s.gates.heldFor(hash)
	fresh := rev == nil || cur == nil
	if !fresh && s.gates.hold(rev, hash) {
		return cur, false, nil
	}
	if fresh {
		t := target{ref: ref, remoteRef: remoteRef, hash: hash, auth: auth}
		prepared, err := s.prepare(netCtx, sess, ar, t, curRev)
		if isDamaged(err) {
			prepared, err = s.prepareAgain(netCtx, t, curRev, err)
		}
		if err != nil {
			return nil, false, err
		}
		if prepared == curRev {
			s.mu.Lock()
			s.resolved = hash
			s.mu.Unlock()
			s.gates.release()
			return cur, false, nil
		}
		rev = &Checked[T]{Revision: *prepared}
	}
	if s.opts.Validate != nil {
		if rev.Model, err = s.opts.Validate(ctx, rev.Dir); err != nil {
			s.gates.release()
			if s.opts.Refused != nil && ctx.Err() == nil {
				s.opts.Refused(rev.Revision, err)
			}
			return nil, false, fmt.Errorf("revision %s (%s) refused: %w", short(rev.Commit), rev.Subject, err)
		}
	}
	// a revision is held only while another runs: the first one is what
	// the operator starts on (Options.Gate)
	if fresh && cur != nil && s.gates.hold(rev, hash) {
		_, held := s.gates.status()
		s.logger.Info("revision held", "revision", rev.Commit, "ref", ref, "subject", rev.Subject, "by", holders(held))
		return cur, false, nil
	}
	s.gates.release()
	if err := s.history.publish(rev.Dir); err != nil {
		return nil, false, err
	}
	rev.AppliedAt = s.opts.Now()
	s.remote.published()
	s.mu.Lock()
	s.current, s.resolved = rev, hash
	s.status.History = append([]Revision{rev.Revision}, s.status.History...)
	if len(s.status.History) > historySize {
		s.status.History = s.status.History[:historySize]
	}
	hist := slices.Clone(s.status.History)
	s.mu.Unlock()
	if err := s.history.write(hist); err != nil {
		s.logger.Warn("revision history not saved; a restart resumes from the current link only", "err", err)
	}
	s.revisions.prune(s.keep)
	s.logger.Info("revision published", "revision", rev.Commit, "ref", ref, "subject", rev.Subject)
	return rev, true, nil
}

// pinnable: a short name, whose full ref is recorded. The remote's HEAD
// follows whatever the remote makes its default branch; a full ref or a
// commit SHA is what it says.
func pinnable(ref string) bool {
	return ref != "" && ref != "HEAD" && !strings.HasPrefix(ref, "refs/") && !shaRe.MatchString(ref)
}

// pin records the full ref a short name resolved to, or refuses another
// one: a tag deleted and a branch pushed under its name (or the reverse)
// must not change what runs unless someone who may set the ref says so
// (docs/security.md).
func (s *Syncer[T]) pin(ref, full string) error {
	if !pinnable(ref) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.ref != ref: // set again meanwhile: the next sync resolves the new one
	case s.fullRef == "":
		s.fullRef = full
	case s.fullRef != full:
		return fmt.Errorf("ref %q now resolves to %s, not %s as before: refused until the ref is set again (%s to follow the new one)",
			ref, full, s.fullRef, full)
	}
	return nil
}

// target is what a sync resolved the desired ref to.
type target struct {
	ref, remoteRef, hash string
	auth                 transport.AuthMethod
}

// prepare fetches the commit, checks its signature (which needs only the
// commit), fetches the blobs of its checked-out paths a filtered fetch
// left out, and writes its revision (checkout refuses an incomplete or
// unsafe one); it returns cur when the commit is the current one.
func (s *Syncer[T]) prepare(ctx context.Context, sess transport.UploadPackSession, ar *packp.AdvRefs, t target, cur *Revision) (*Revision, error) {
	if err := s.remote.fetch(ctx, sess, ar, t.remoteRef, t.hash, t.auth); err != nil {
		return nil, err
	}
	commit, err := s.commits.peel(plumbing.NewHash(t.hash))
	if err != nil {
		return nil, err
	}
	if cur != nil && commit.Hash.String() == cur.Commit {
		return cur, nil
	}
	if err := verify(s.opts.VerifyKeysDir, commit); err != nil {
		return nil, err
	}
	if err := s.remote.fill(ctx, commit, sess, ar, t.auth); err != nil {
		return nil, err
	}
	rev := &Revision{
		Commit: commit.Hash.String(), Ref: t.ref, RemoteRef: t.remoteRef, Subject: firstLine(commit.Message),
		Author: commit.Author.Name + " <" + commit.Author.Email + ">", Time: commit.Author.When,
	}
	if rev.Dir, rev.Tree, err = s.revisions.checkout(commit, cur); err != nil {
		return nil, err
	}
	return rev, require(s.opts.Require, rev)
}

// prepareAgain starts the object store over when prepare found an object
// missing or unreadable (a damaged store, or a pack the remote sent
// without it), and prepares once more from a fresh fetch. Failing again,
// the remote is at fault: it sends an incomplete pack.
func (s *Syncer[T]) prepareAgain(ctx context.Context, t target, cur *Revision, cause error) (*Revision, error) {
	s.logger.Warn("the object store lacks or cannot read an object; starting it over and fetching again", "err", Scrub(cause.Error()))
	if err := s.remote.reset(); err != nil {
		return nil, errors.Join(cause, err)
	}
	var sess transport.UploadPackSession
	var ar *packp.AdvRefs
	if t.remoteRef != "" { // a session serves one fetch
		var err error
		if sess, ar, err = s.remote.open(ctx, t.auth); err != nil {
			return nil, err
		}
		defer sess.Close()
	}
	rev, err := s.prepare(ctx, sess, ar, t, cur)
	if isDamaged(err) {
		return nil, fmt.Errorf("%w (fetched twice, the second time into an empty object store: the remote's pack lacks it)", err)
	}
	return rev, err
}

// require checks the paths every revision must have.
func require(paths []string, rev *Revision) error {
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(rev.Dir, p)); err != nil {
			return fmt.Errorf("revision %s has no %s", short(rev.Commit), p)
		}
	}
	return nil
}

// keep names the revisions that must stay on disk: the current and the
// previous published one (a restart falls back to it when the current
// one is refused) and those Options.InUse names (the running model's).
func (s *Syncer[T]) keep() map[string]bool {
	s.mu.Lock()
	keep := map[string]bool{}
	for i, r := range s.status.History {
		if i < 2 {
			keep[r.Commit] = true
		}
	}
	s.mu.Unlock()
	if s.opts.InUse != nil {
		for _, c := range s.opts.InUse() {
			keep[c] = true
		}
	}
	return keep
}
