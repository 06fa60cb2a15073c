package commitstatus

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Defaults of ReadCacheOptions.
const (
	defaultReadTTL = time.Minute
	// maxCachedCommits bounds the commits a ReadCache remembers: a gate
	// asks of the commit it holds, seldom more than a few.
	maxCachedCommits = 16
)

// ReadCacheOptions configure NewReadCache.
type ReadCacheOptions struct {
	// TTL is how long a read answers for its commit: the poll interval,
	// so that the gates of one poll share one read (default 1m). An
	// error is kept as long, or until the forge's Retry-After.
	TTL time.Duration
	// Timeout bounds one read (default 30s).
	Timeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// ReadCache reads a commit's statuses through a Lister at most once per
// TTL, whoever asks: concurrent askers of one commit wait for the same
// read. Its errors are *ReadError.
type ReadCache struct {
	lister Lister
	opts   ReadCacheOptions

	mu      sync.Mutex
	entries map[string]*readEntry
	order   []string // entries' commits, oldest first
}

// readEntry is one read of a commit: in flight until done is closed.
type readEntry struct {
	done     chan struct{}
	until    time.Time
	statuses []Posted
	err      error
}

// NewReadCache makes a ReadCache over l.
func NewReadCache(l Lister, o ReadCacheOptions) *ReadCache {
	if o.TTL <= 0 {
		o.TTL = defaultReadTTL
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &ReadCache{lister: l, opts: o, entries: map[string]*readEntry{}}
}

// ReadError is a read that brought no statuses: a gate holds with its
// message as the reason, and the cache reads again after RetryAt. The
// message leaves RetryAt out: it is posted on the commit as the hold's
// reason, and a reason that changed at each poll would post again at
// each poll, to a forge that may be rate-limiting us.
type ReadError struct {
	Commit  string
	RetryAt time.Time
	Err     error
}

func (e *ReadError) Error() string {
	short := e.Commit
	if len(short) > 12 {
		short = short[:12]
	}
	what := e.Err.Error()
	var he *HTTPError
	if errors.As(e.Err, &he) && he.Code == http.StatusTooManyRequests {
		what = "the forge rate-limits reads (" + what + ")"
	}
	return fmt.Sprintf("reading the statuses of %s from the forge: %s", short, what)
}

func (e *ReadError) Unwrap() error { return e.Err }

// Statuses is the commit's statuses as read at most TTL ago.
func (c *ReadCache) Statuses(ctx context.Context, commit string) ([]Posted, error) {
	c.mu.Lock()
	if e := c.entries[commit]; e != nil {
		select {
		case <-e.done:
			if c.opts.Now().Before(e.until) {
				c.mu.Unlock()
				return slices.Clone(e.statuses), e.err
			}
		default:
			c.mu.Unlock()
			select {
			case <-e.done:
				return slices.Clone(e.statuses), e.err
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	e := &readEntry{done: make(chan struct{})}
	c.put(commit, e)
	c.mu.Unlock()

	rctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	statuses, err := c.lister.Statuses(rctx, commit)
	cancel()
	now := c.opts.Now()
	e.until = now.Add(c.opts.TTL)
	if err != nil {
		var he *HTTPError
		if errors.As(err, &he) {
			if ra := min(retryAfter(he.RetryAfter, now), maxRetryAfter); now.Add(ra).After(e.until) {
				e.until = now.Add(ra)
			}
		}
		err = &ReadError{Commit: commit, RetryAt: e.until, Err: err}
		if ctx.Err() != nil {
			// the asker gave up: not the forge's answer, so not kept
			c.mu.Lock()
			if c.entries[commit] == e {
				delete(c.entries, commit)
				c.order = slices.DeleteFunc(c.order, func(k string) bool { return k == commit })
			}
			c.mu.Unlock()
		}
	}
	e.statuses, e.err = statuses, err
	close(e.done)
	return slices.Clone(statuses), err
}

// put records e for commit, forgetting the oldest commit past
// maxCachedCommits; mu is held.
func (c *ReadCache) put(commit string, e *readEntry) {
	if _, ok := c.entries[commit]; !ok {
		c.order = append(c.order, commit)
		if len(c.order) > maxCachedCommits {
			delete(c.entries, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.entries[commit] = e
}
