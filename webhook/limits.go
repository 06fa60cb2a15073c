package webhook

import (
	"context"
	"fmt"
	"net"
	"sync"

	"golang.org/x/sync/semaphore"
)

// Bounds of what a client that reaches the port can make the server hold
// (docs/security.md, "Limits"): whoever reaches it without a client CA is
// not authenticated.
const (
	// DefaultMaxInFlightBytes bounds the request bodies read and not yet
	// answered, all webhooks together: a request waits for its share
	// before its body is read, within its timeout.
	DefaultMaxInFlightBytes = 64 << 20
	// DefaultMaxConnections bounds the open connections; more wait in the
	// listen backlog.
	DefaultMaxConnections = 256
	// maxHeaderBytes bounds the request line and headers (net/http answers
	// 431 past it): a webhook path is a name of at most 253 characters.
	maxHeaderBytes = 32 << 10
	// maxLoggedName bounds a name taken from a path in a log line.
	maxLoggedName = 256
)

// short is a name from a request for a log line or an answer, bounded.
func short(s string) string {
	if len(s) <= maxLoggedName {
		return s
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:maxLoggedName], len(s))
}

// slots bound the requests one webhook answers at once. A webhook's entry
// exists only while requests of it are running or waiting, and only for a
// webhook the Reviewer routes: an unknown path never gets one.
type slots struct {
	n  int
	mu sync.Mutex
	by map[string]*slot
}

type slot struct {
	ch    chan struct{}
	users int // requests holding or waiting for a turn
}

// acquire takes one of key's turns, waiting until ctx ends.
func (s *slots) acquire(ctx context.Context, key string) (func(), error) {
	s.mu.Lock()
	sl := s.by[key]
	if sl == nil {
		sl = &slot{ch: make(chan struct{}, s.n)}
		s.by[key] = sl
	}
	sl.users++
	s.mu.Unlock()
	leave := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if sl.users--; sl.users == 0 {
			delete(s.by, key)
		}
	}
	select {
	case sl.ch <- struct{}{}:
		return func() { <-sl.ch; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, fmt.Errorf("%d requests of this webhook are running already: %w", s.n, ctx.Err())
	}
}

// budget is the bytes of request bodies held at once, all webhooks
// together.
type budget struct {
	max int64
	sem *semaphore.Weighted
}

func newBudget(max int64) *budget { return &budget{max: max, sem: semaphore.NewWeighted(max)} }

// take reserves n bytes, waiting (FIFO) until ctx ends.
func (b *budget) take(ctx context.Context, n int64) (func(), error) {
	n = min(n, b.max)
	if err := b.sem.Acquire(ctx, n); err != nil {
		return nil, fmt.Errorf("%d bytes of requests are being answered already: %w", b.max, err)
	}
	return func() { b.sem.Release(n) }, nil
}

// limitListener accepts at most n connections at once; Accept waits for
// one to close past that, or for the listener to close.
type limitListener struct {
	net.Listener
	sem       chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), closed: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
