package changewindow

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// parser reads crontabs as hooks' schedules do (loader.ParseCrontab):
// seconds optional, descriptors. It is built here, not imported, to
// keep this package a leaf.
var parser = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// neverBefore is where Parse looks for a schedule's first start: cron
// fields repeat within a few years (robfig/cron searches five), so a
// schedule that fires from here fires from any instant.
var neverBefore = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// wallSchedule is a cron schedule read on a zone's wall clock: Next runs
// on wall times written as UTC (a timeline with no DST), and instant
// maps each wall time back onto the zone's real instants.
type wallSchedule struct {
	spec cron.Schedule
	loc  *time.Location
}

func parseSchedule(spec string, loc *time.Location) (wallSchedule, error) {
	spec = strings.TrimSpace(spec)
	switch {
	case spec == "":
		return wallSchedule{}, fmt.Errorf("required (a crontab such as \"0 22 * * 1-5\")")
	case strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ="):
		return wallSchedule{}, fmt.Errorf("%q: set the zone in timeZone, not in the schedule", spec)
	case strings.HasPrefix(spec, "@every"):
		return wallSchedule{}, fmt.Errorf("%q: @every has no fixed start; a window needs one (a crontab or @daily, @weekly...)", spec)
	}
	fields := strings.Fields(spec)
	if len(fields) == 5 {
		fields = append([]string{"0"}, fields...)
	}
	if len(fields) == 6 {
		dow, err := sundaySeven(fields[5])
		if err != nil {
			return wallSchedule{}, fmt.Errorf("%q: %w", spec, err)
		}
		fields[5] = dow
	} else if !strings.HasPrefix(spec, "@") {
		return wallSchedule{}, fmt.Errorf("%q: want 5 fields (minute hour day-of-month month day-of-week) or 6 (with seconds first), got %d", spec, len(fields))
	}
	s, err := parser.Parse(strings.Join(fields, " "))
	if err != nil {
		return wallSchedule{}, fmt.Errorf("%q: %w", spec, err)
	}
	if s.Next(neverBefore).IsZero() {
		return wallSchedule{}, fmt.Errorf("%q never fires (no such date), so the window would never open", spec)
	}
	return wallSchedule{spec: s, loc: loc}, nil
}

// sundaySeven reads 7 in a day-of-week field as Sunday (cron's 0), as
// hooks' schedules do: a lone 7, and a range ending at 7.
func sundaySeven(field string) (string, error) {
	var out []string
	for _, part := range strings.Split(field, ",") {
		rng, step, hasStep := strings.Cut(part, "/")
		lo, hi, isRange := strings.Cut(rng, "-")
		switch {
		case rng == "7":
			out = append(out, strings.Replace(part, "7", "0", 1))
		case isRange && hi == "7":
			from, err := strconv.Atoi(lo)
			if err != nil {
				out = append(out, part)
				continue
			}
			n := 1
			if hasStep {
				if n, err = strconv.Atoi(step); err != nil || n < 1 {
					return "", fmt.Errorf("day-of-week step %q", step)
				}
			}
			for d := from; d <= 7; d += n {
				out = append(out, strconv.Itoa(d%7))
			}
		default:
			out = append(out, part)
		}
	}
	return strings.Join(out, ","), nil
}

// wall is t's wall clock in loc, written as a UTC time.
func wall(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

// instant is the real instant of wall time w in loc: a time the clocks
// skip is the instant they jump (the gap's end); a time they repeat is
// its first instant. Go's time.Date picks either for a repeated time, so
// both are settled here.
func (s wallSchedule) instant(w time.Time) time.Time {
	t := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), s.loc)
	if got := wall(t, s.loc); !got.Equal(w) {
		start, end := t.ZoneBounds()
		if got.After(w) {
			return start // moved past the jump: the jump is when this zone began
		}
		return end
	}
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return t
	}
	_, prev := start.Add(-time.Nanosecond).Zone()
	_, cur := t.Zone()
	if alt := t.Add(time.Duration(cur-prev) * time.Second); alt.Before(start) && wall(alt, s.loc).Equal(w) {
		return alt
	}
	return t
}

// next is the first start after x (zero: none within cron's search).
func (s wallSchedule) next(x time.Time) time.Time {
	w := s.spec.Next(wall(x, s.loc))
	if w.IsZero() {
		return w
	}
	if t := s.instant(w); t.After(x) {
		return t
	}
	// x is in an hour the clocks repeat, the second time round: the
	// starts of that hour opened the first time, so look past it
	zoneStart, _ := x.In(s.loc).ZoneBounds()
	w = s.spec.Next(wall(zoneStart.Add(-time.Second), s.loc))
	if w.IsZero() {
		return w
	}
	if t := s.instant(w); t.After(x) {
		return t
	}
	return time.Time{}
}

// latest is the last start in (lo, hi], or zero. Starts are whole
// seconds and next is monotonic, so halving (lo, hi] finds it in about
// log2 of its length in seconds.
func (s wallSchedule) latest(lo, hi time.Time) time.Time {
	if n := s.next(lo); n.IsZero() || n.After(hi) {
		return time.Time{}
	}
	a, b := lo, hi // next(a) ≤ hi < next(b)
	for b.Sub(a) > time.Second {
		m := a.Add(b.Sub(a) / 2)
		if n := s.next(m); !n.IsZero() && !n.After(hi) {
			a = m
		} else {
			b = m
		}
	}
	return s.next(a)
}

// openAt is whether w is open at t and, if so, when that opening ends.
func (w *window) openAt(t time.Time) (time.Time, bool) {
	start := w.sched.latest(t.Add(-w.duration), t)
	if start.IsZero() {
		return time.Time{}, false
	}
	return start.Add(w.duration), true
}
