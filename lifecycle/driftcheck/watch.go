package driftcheck

import (
	"context"
	"sync"
	"time"
)

// watch runs the drift checks of modules whose release objects were
// edited (Checker.Edited), debounced within Options.Quiet and
// Options.Spacing.
type watch struct {
	c    *Checker
	wake chan struct{}

	mu      sync.Mutex
	pending map[string]*cue      // modules to check, by name
	last    map[string]time.Time // when each module's last event check started
}

// cue is a module's edits not checked yet.
type cue struct{ first, last time.Time }

func newWatch(c *Checker) *watch {
	return &watch{c: c, wake: make(chan struct{}, 1), pending: map[string]*cue{}, last: map[string]time.Time{}}
}

// edited notes an edit of a module's objects; it never blocks.
func (w *watch) edited(module string) {
	if w.c.opts.Detector == nil {
		return
	}
	now := w.c.opts.Now()
	w.mu.Lock()
	c := w.pending[module]
	if c == nil {
		c = &cue{first: now}
		w.pending[module] = c
	}
	c.last = now
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// due is when a module's check runs (under mu).
func (w *watch) due(name string, c *cue) time.Time {
	quiet, spacing := w.c.opts.Quiet, w.c.opts.Spacing
	at := c.last.Add(quiet)
	if latest := c.first.Add(spacing); latest.Before(at) {
		at = latest
	}
	if l, ok := w.last[name]; ok && l.Add(spacing).After(at) {
		at = l.Add(spacing)
	}
	return at
}

// loop checks the modules whose time came until ctx ends, waking on an
// edit or when the next module is due.
func (w *watch) loop(ctx context.Context) {
	for {
		now := w.c.opts.Now()
		next := w.step(ctx, now)
		if ctx.Err() != nil {
			return
		}
		var timer <-chan time.Time
		if !next.IsZero() {
			timer = w.c.opts.After(next.Sub(now))
		}
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-w.c.opts.Inbox.woken():
			for _, module := range w.c.opts.Inbox.take() {
				w.edited(module)
			}
		case <-timer:
		}
	}
}

// step checks the modules due at now and returns when the next one is due
// (zero: none waits). A module that is not ready yet (running, failed)
// keeps its cue and is tried again a spacing later; one that is gone from
// the tree, disabled or without a chart drops it. The loop runs it on
// each wake; tests run it on their clock.
func (w *watch) step(ctx context.Context, now time.Time) time.Time {
	var due []string
	var next time.Time
	w.mu.Lock()
	for name, c := range w.pending {
		at := w.due(name, c)
		if !at.After(now) {
			due = append(due, name)
			delete(w.pending, name)
			w.last[name] = now
			continue
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	w.mu.Unlock()
	retry := false
	for _, name := range due {
		if ctx.Err() != nil {
			return next
		}
		if !w.check(ctx, name) {
			w.mu.Lock()
			if w.pending[name] == nil {
				w.pending[name] = &cue{first: now, last: now}
			}
			w.mu.Unlock()
			retry = true
		}
	}
	if retry {
		// the retry's time, and any other cue's
		w.mu.Lock()
		next = time.Time{}
		for name, c := range w.pending {
			if at := w.due(name, c); next.IsZero() || at.Before(next) {
				next = at
			}
		}
		w.mu.Unlock()
	}
	return next
}

// check checks a module of the running tree; false: not ready yet.
func (w *watch) check(ctx context.Context, name string) bool {
	model, _ := w.c.opts.Trees.Current()
	if model == nil {
		return true
	}
	m := model.Module(name)
	if m == nil {
		return true
	}
	return w.c.checkModule(ctx, m)
}
