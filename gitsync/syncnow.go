package gitsync

import (
	"context"
	"strings"
	"sync"
)

// syncCount counts Run's syncs, so that SyncNow can wait for one that
// started after it was asked: a sync under way when it is asked may have
// listed the remote's refs before the push it is asked for.
type syncCount struct {
	mu      sync.Mutex
	started uint64
	ended   uint64
	lastErr error
	done    chan struct{} // closed at the next end
}

func (c *syncCount) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.started++
	return c.started
}

func (c *syncCount) end(n uint64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended, c.lastErr = n, err
	if c.done != nil {
		close(c.done)
		c.done = nil
	}
}

// waitFor is closed once sync n ended (nil: it has), and that sync's
// error once it has.
func (c *syncCount) waitFor(n uint64) (<-chan struct{}, error, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended >= n {
		return nil, c.lastErr, true
	}
	if c.done == nil {
		c.done = make(chan struct{})
	}
	return c.done, nil, false
}

// SyncNow asks s's Run to sync at once, as a signed webhook does
// (Trigger), and waits until a sync that started after the call has
// ended; it returns that sync's error, or ctx's. It needs Run to be
// running. A function, as First is: the Syncer's methods are its loop's.
func SyncNow[T any](ctx context.Context, s *Syncer[T]) error {
	s.syncs.mu.Lock()
	want := s.syncs.started + 1
	s.syncs.mu.Unlock()
	s.Trigger()
	for {
		done, err, ended := s.syncs.waitFor(want)
		if ended {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-done:
		}
	}
}

// holders names a gate's holds, for a log line.
func holders(holds []Hold) string {
	by := make([]string, 0, len(holds))
	for _, h := range holds {
		by = append(by, h.By)
	}
	return strings.Join(by, ",")
}
