package gitsync

import (
	"context"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
)

// Restore resumes from the revisions an earlier run left on disk, newest
// first: the first whose commit is in the store, whose signature the
// current keys accept, whose files match the commit's tree (what differs
// is written again from the store) and which Validate accepts (against
// today's configuration) becomes current again, so a restarted operator
// runs it while the remote is unreachable, and the next revision is
// written incrementally. It returns nil when none qualifies. A revision
// refused here is never run, even if it was published before.
func (s *Syncer[T]) Restore(ctx context.Context) *Checked[T] {
	hist := s.history.read()
	for i, rev := range hist {
		dir := filepath.Join(s.opts.CheckoutDir, "revisions", rev.Commit)
		if !shaRe.MatchString(rev.Commit) {
			continue
		}
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		model, err := s.reuse(ctx, &rev)
		if err != nil {
			s.logger.Warn("revision on disk not resumed", "revision", rev.Commit, "err", Scrub(err.Error()))
			continue
		}
		// the revisions published before it stay in the history (and in
		// history.json at the next publish): the fleet gate tells a
		// rollback to their content by it (docs/operator.md, "Fleets")
		s.mu.Lock()
		s.current = &Checked[T]{Revision: rev, Model: model}
		s.status.History = append([]Revision{rev}, hist[i+1:]...)
		if len(s.status.History) > historySize {
			s.status.History = s.status.History[:historySize]
		}
		s.mu.Unlock()
		s.logger.Info("resumed the revision on disk", "revision", rev.Commit, "subject", rev.Subject)
		return &Checked[T]{Revision: rev, Model: model}
	}
	return nil
}

// reuse checks a revision on disk as a new one is checked (its commit's
// signature against today's keys, its files against the commit's tree,
// rewriting what differs, Require and Validate), and publishes it. It
// returns what Validate made of it.
func (s *Syncer[T]) reuse(ctx context.Context, rev *Revision) (model T, err error) {
	c, err := s.commits.commit(plumbing.NewHash(rev.Commit))
	if err != nil {
		return model, err
	}
	if err := verify(s.opts.VerifyKeysDir, c); err != nil {
		return model, err
	}
	rev.Subject, rev.Author, rev.Time = firstLine(c.Message), c.Author.Name+" <"+c.Author.Email+">", c.Author.When
	if rev.Dir, rev.Tree, err = s.revisions.checkout(c, nil); err != nil {
		return model, err
	}
	if err := require(s.opts.Require, rev); err != nil {
		return model, err
	}
	if s.opts.Validate != nil {
		if model, err = s.opts.Validate(ctx, rev.Dir); err != nil {
			return model, err
		}
	}
	return model, s.history.publish(rev.Dir)
}
