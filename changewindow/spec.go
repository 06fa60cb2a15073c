package changewindow

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind is whether a window lets changes through or holds them.
type Kind string

const (
	// Allow: changes apply only inside allow windows (if any is set).
	Allow Kind = "allow"
	// Deny: no change applies inside a deny window.
	Deny Kind = "deny"
)

// Spec is one window as the cluster's config in git writes it (YAML or
// JSON): {name, kind, schedule, duration, timeZone}.
type Spec struct {
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	// Schedule is a crontab: when the window opens.
	Schedule string `json:"schedule"`
	// Duration is how long it stays open, as Go writes durations (4h,
	// 90m, 1h30m).
	Duration string `json:"duration"`
	// TimeZone is an IANA name (Europe/Berlin); default UTC.
	TimeZone string `json:"timeZone,omitempty"`
}

// MaxDuration bounds a window's duration, so a search for the next
// opening stays bounded (Horizon is longer).
const MaxDuration = 366 * 24 * time.Hour

// window is a parsed Spec.
type window struct {
	name     string
	kind     Kind
	sched    wallSchedule
	duration time.Duration
}

// Set is the windows of one cluster, parsed; its zero value (or nil)
// holds nothing.
type Set struct {
	allow, deny []*window
}

// Parse checks the specs and reads them into a Set. Every problem is
// reported, each naming the window and field. Besides each field's
// syntax, it refuses what can be told never to open: a duration of zero
// or less, a schedule that never fires, and windows that leave no time
// to apply within Horizon from now (deny windows covering every allow
// window, say); a window that opens so rarely only later time shows it
// is a held state from Decide, with its reason.
func Parse(specs []Spec, now time.Time) (*Set, error) {
	s := &Set{}
	var errs []error
	seen := map[string]bool{}
	for i, sp := range specs {
		w, err := parseOne(sp)
		if err == nil && seen[sp.Name] {
			err = fmt.Errorf("window %q: name: used by another window", sp.Name)
		}
		if err != nil {
			if sp.Name == "" {
				err = fmt.Errorf("window %d: %w", i+1, err)
			}
			errs = append(errs, err)
			continue
		}
		seen[sp.Name] = true
		if w.kind == Allow {
			s.allow = append(s.allow, w)
		} else {
			s.deny = append(s.deny, w)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if d := s.Decide(now); d.Exhausted {
		return nil, fmt.Errorf("windows: %s", d.Reason)
	}
	return s, nil
}

// parseOne reads one spec; errors name the window and the field.
func parseOne(sp Spec) (*window, error) {
	var errs []string
	if strings.TrimSpace(sp.Name) == "" {
		errs = append(errs, "name: required")
	}
	if sp.Kind != Allow && sp.Kind != Deny {
		errs = append(errs, fmt.Sprintf("kind: %q: want allow or deny", sp.Kind))
	}
	loc := time.UTC
	if sp.TimeZone != "" {
		l, err := time.LoadLocation(sp.TimeZone)
		if err != nil || sp.TimeZone == "Local" {
			errs = append(errs, fmt.Sprintf("timeZone: %q: not an IANA time zone name such as Europe/Berlin", sp.TimeZone))
		} else {
			loc = l
		}
	}
	sched, err := parseSchedule(sp.Schedule, loc)
	if err != nil {
		errs = append(errs, "schedule: "+err.Error())
	}
	d, err := time.ParseDuration(strings.TrimSpace(sp.Duration))
	switch {
	case sp.Duration == "":
		errs = append(errs, "duration: required (such as 4h or 90m)")
	case err != nil:
		errs = append(errs, fmt.Sprintf("duration: %q: want a duration such as 4h or 90m", sp.Duration))
	case d <= 0:
		errs = append(errs, fmt.Sprintf("duration: %s: a window must stay open for some time; it would never open", sp.Duration))
	case d > MaxDuration:
		errs = append(errs, fmt.Sprintf("duration: %s: longer than %s", sp.Duration, MaxDuration))
	}
	if len(errs) > 0 {
		prefix := ""
		if sp.Name != "" {
			prefix = fmt.Sprintf("window %q: ", sp.Name)
		}
		return nil, errors.New(prefix + strings.Join(errs, "; "))
	}
	return &window{name: sp.Name, kind: sp.Kind, sched: sched, duration: d}, nil
}
