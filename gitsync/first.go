package gitsync

import (
	"context"
	"time"
)

// First is the revision a starting operator runs (docs/git.md): the
// newest revision on disk that the current keys and Validate still accept
// (Restore), at once, for the poll loop then syncs with the remote, which
// may hang or send a pack that takes long to index; else the remote's.
// With neither, it retries with backoff (1s, doubling, at most maxWait)
// until one comes, telling onRetry (nil: none) of each failure; it fails
// only when ctx ends. It is a function, not a method: the Syncer's methods
// are its own loop's.
func First[T any](ctx context.Context, s *Syncer[T], maxWait time.Duration, onRetry func(err error, wait time.Duration)) (*Checked[T], error) {
	if restored := s.Restore(ctx); restored != nil {
		s.logger.Info("running the revision on disk; syncing with the remote next", "revision", restored.Commit)
		return restored, nil
	}
	for attempt := 0; ; attempt++ {
		rev, _, err := s.Sync(ctx)
		if err == nil {
			s.logger.Info("git source ready", "ref", rev.Ref, "revision", rev.Commit)
			return rev, nil
		}
		wait := min(time.Second<<min(attempt, 5), maxWait)
		s.logger.Error("first sync failed; retrying", "err", err, "retry_in", wait)
		if onRetry != nil {
			onRetry(err, wait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.opts.After(wait):
		}
	}
}
