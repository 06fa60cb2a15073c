package lifecycle

import (
	"context"
	"sync"
	"time"
)

// Event checks' bounds (docs/operator.md, "Drift"): a module's check runs
// once its objects were quiet for driftQuiet (a rollout, or a burst of
// edits, is one check), at the latest driftSpacing after the first edit
// not checked yet (a controller that writes every second is still
// checked), and never sooner than driftSpacing after its last event
// check (such a controller costs one check per driftSpacing).
const (
	driftQuiet   = 2 * time.Second
	driftSpacing = 10 * time.Second
)

// driftWatch runs the drift checks of modules whose release objects were
// edited, as the health tracker tells (Operator.ReleaseEdited), on its own
// goroutine and clock: never in "main", and with the interval's check
// (driftSteps.checkModule).
type driftWatch struct {
	steps          *driftSteps
	now            func() time.Time
	after          func(time.Duration) <-chan time.Time
	quiet, spacing time.Duration
	wake           chan struct{}

	mu      sync.Mutex
	pending map[string]*driftCue // modules to check, by name
	last    map[string]time.Time // when each module's last event check started
}

// driftCue is a module's edits not checked yet.
type driftCue struct{ first, last time.Time }

func newDriftWatch(s *driftSteps, cfg Config) *driftWatch {
	return &driftWatch{steps: s, now: cfg.Now, after: cfg.After, quiet: driftQuiet, spacing: driftSpacing,
		wake: make(chan struct{}, 1), pending: map[string]*driftCue{}, last: map[string]time.Time{}}
}

// edited notes an edit of a module's objects; it never blocks.
func (w *driftWatch) edited(module string) {
	if w.steps.cfg.Drift == nil {
		return
	}
	now := w.now()
	w.mu.Lock()
	c := w.pending[module]
	if c == nil {
		c = &driftCue{first: now}
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
func (w *driftWatch) due(name string, c *driftCue) time.Time {
	at := c.last.Add(w.quiet)
	if latest := c.first.Add(w.spacing); latest.Before(at) {
		at = latest
	}
	if l, ok := w.last[name]; ok && l.Add(w.spacing).After(at) {
		at = l.Add(w.spacing)
	}
	return at
}

// loop checks the modules whose time came until ctx ends. A module that
// is not ready yet (running, failed) keeps its cue and is tried again
// driftSpacing later; one that is gone from the tree, disabled or without
// a chart drops it.
func (w *driftWatch) loop(ctx context.Context) {
	for {
		now := w.now()
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
		for _, name := range due {
			if ctx.Err() != nil {
				return
			}
			if !w.check(ctx, name) {
				w.mu.Lock()
				if w.pending[name] == nil {
					w.pending[name] = &driftCue{first: now, last: now}
				}
				w.mu.Unlock()
				next = now // compute the retry's time
			}
		}
		var timer <-chan time.Time
		if !next.IsZero() {
			timer = w.after(next.Sub(now))
		}
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-timer:
		}
	}
}

// check checks a module of the running tree; false: not ready yet.
func (w *driftWatch) check(ctx context.Context, name string) bool {
	model, _ := w.steps.trees.Current()
	if model == nil {
		return true
	}
	m := model.Module(name)
	if m == nil {
		return true
	}
	return w.steps.checkModule(ctx, m)
}

// moduleLocks keep two drift checks (or a check and a correction) of one
// module from overlapping: the interval's, an edit's and "main"'s.
type moduleLocks struct {
	mu sync.Mutex
	by map[string]*sync.Mutex
}

// lock locks a module's drift checks and returns the unlock.
func (l *moduleLocks) lock(name string) func() {
	l.mu.Lock()
	if l.by == nil {
		l.by = map[string]*sync.Mutex{}
	}
	m := l.by[name]
	if m == nil {
		m = &sync.Mutex{}
		l.by[name] = m
	}
	l.mu.Unlock()
	m.Lock()
	return m.Unlock
}
