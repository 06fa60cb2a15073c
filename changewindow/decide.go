package changewindow

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Horizon bounds how far Decide looks for the time a held change may
// apply; maxSteps bounds the windows it steps through on the way.
const (
	Horizon  = 400 * 24 * time.Hour
	maxSteps = 10000
)

// Decision is whether a change may apply at an instant.
type Decision struct {
	Open bool `json:"open"`
	// HeldBy names the window that holds the change now: the deny window
	// open now, or, outside every allow window, the allow window that
	// opens next.
	HeldBy string `json:"heldBy,omitempty"`
	Kind   Kind   `json:"kind,omitempty"`
	// Until is when the change may apply: the end of the deny, or the
	// next allow opening, whichever windows follow included. Zero when
	// Exhausted.
	Until time.Time `json:"until,omitzero"`
	// Exhausted: no time to apply within Horizon (a held state, never an
	// apply).
	Exhausted bool `json:"exhausted,omitempty"`
	// Reason is one line for the commit and /status.
	Reason string `json:"reason,omitempty"`
}

// Open answers whether a change may apply at now, and if not which
// window holds it and until when (zero: no time within Horizon).
func (s *Set) Open(now time.Time) (open bool, heldBy string, until time.Time) {
	d := s.Decide(now)
	return d.Open, d.HeldBy, d.Until
}

// Decide steps from now through the windows: past the end of every deny
// window open, to the next allow opening when outside all of them, until
// an instant passes both, or Horizon.
func (s *Set) Decide(now time.Time) Decision {
	if s == nil {
		return Decision{Open: true}
	}
	t := now
	var held *window
	var seen []*window // every window met on the way, for an exhausted search
	for range maxSteps {
		if t.Sub(now) > Horizon {
			break
		}
		if w, end := s.denyAt(t); w != nil {
			held, seen = first(held, w), met(seen, w)
			t = end
			continue
		}
		if len(s.allow) > 0 && !s.allowAt(t) {
			w, start := s.nextAllow(t)
			if w == nil {
				break // no allow window fires again within cron's search
			}
			held, seen = first(held, w), met(seen, w)
			t = start
			continue
		}
		if held == nil {
			return Decision{Open: true}
		}
		return Decision{HeldBy: held.name, Kind: held.kind, Until: t,
			Reason: fmt.Sprintf("held by window %s until %s", held, t.In(held.sched.loc).Format(time.RFC3339))}
	}
	if held == nil { // unreachable: a step that holds nothing returns
		return Decision{Open: true}
	}
	names := make([]string, len(seen))
	for i, w := range seen {
		names[i] = w.String()
	}
	return Decision{HeldBy: held.name, Kind: held.kind, Exhausted: true,
		Reason: fmt.Sprintf("held by window %s: no time to apply within %d days of %s: windows %s leave none",
			held, int(Horizon.Hours()/24), now.UTC().Format(time.RFC3339), strings.Join(names, ", "))}
}

// met adds w to the windows met, once.
func met(seen []*window, w *window) []*window {
	if slices.Contains(seen, w) {
		return seen
	}
	return append(seen, w)
}

func (w *window) String() string { return fmt.Sprintf("%q (%s)", w.name, w.kind) }

// first keeps the window found at the first step: it holds the change
// now, the later ones only push Until.
func first(held, w *window) *window {
	if held != nil {
		return held
	}
	return w
}

// denyAt is the deny window open at t whose opening ends last.
func (s *Set) denyAt(t time.Time) (*window, time.Time) {
	var got *window
	var end time.Time
	for _, w := range s.deny {
		if e, ok := w.openAt(t); ok && e.After(end) {
			got, end = w, e
		}
	}
	return got, end
}

func (s *Set) allowAt(t time.Time) bool {
	for _, w := range s.allow {
		if _, ok := w.openAt(t); ok {
			return true
		}
	}
	return false
}

// nextAllow is the allow window that opens first after t.
func (s *Set) nextAllow(t time.Time) (*window, time.Time) {
	var got *window
	var at time.Time
	for _, w := range s.allow {
		if n := w.sched.next(t); !n.IsZero() && (got == nil || n.Before(at)) {
			got, at = w, n
		}
	}
	return got, at
}
