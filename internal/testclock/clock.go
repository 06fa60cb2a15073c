package testclock

import (
	"sync"
	"time"
)

// Manual moves only when Advance is called.
type Manual struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// New starts at 2026-01-01T00:00:00Z.
func New() *Manual { return &Manual{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

// Now is the clock's time.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After fires once the clock has been advanced by d.
func (c *Manual) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.waiters = append(c.waiters, waiter{c.now.Add(d), ch})
	return ch
}

// Waiting is how many After calls wait.
func (c *Manual) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// LongestWait is the longest wait asked for that has not fired (0: none).
func (c *Manual) LongestWait() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var d time.Duration
	for _, w := range c.waiters {
		d = max(d, w.at.Sub(c.now))
	}
	return d
}

// ShortestWait is the shortest wait asked for that has not fired (0:
// none).
func (c *Manual) ShortestWait() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var d time.Duration
	for i, w := range c.waiters {
		if left := w.at.Sub(c.now); i == 0 || left < d {
			d = left
		}
	}
	return d
}

// Advance moves the clock and fires the waits that are due.
func (c *Manual) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.now
	}
	c.waiters = kept
}
