package driftcheck

import (
	"context"
	"testing"
	"time"

	"github.com/addonops/addon-operator/internal/testwait"
	"github.com/addonops/addon-operator/lifecycle/runstate"
)

// run moves the fixture's clock from its offset to until in 100ms steps,
// noting an edit at the offsets edits picks and running the watch's step
// at each: what the loop does on each wake, on the test's clock.
func (f *fixture) run(t0 time.Time, until time.Duration, edits func(at time.Duration) bool) {
	for at := f.clock.Now().Sub(t0); at <= until; at += 100 * time.Millisecond {
		if edits != nil && edits(at) {
			f.c.Edited("web")
		}
		f.c.edits.step(context.Background(), f.clock.Now())
		f.clock.Advance(100 * time.Millisecond)
	}
}

func (f *fixture) offsets(t0 time.Time) []time.Duration {
	var out []time.Duration
	for _, c := range f.det.checks() {
		out = append(out, c.Sub(t0))
	}
	return out
}

// Edit checks on the injected clock: a burst is one check once quiet; a
// writer that never stops is checked once per spacing while it writes; a
// module that is not ready is checked once it is; a disabled one's edit
// is dropped (docs/operator.md, "Drift").
func TestWatchDebounce(t *testing.T) {
	t.Parallel()
	every := func(from, to, period time.Duration) func(time.Duration) bool {
		return func(at time.Duration) bool { return at >= from && at <= to && (at-from)%period == 0 }
	}
	tests := []struct {
		name  string
		until time.Duration
		edits func(time.Duration) bool
		want  []time.Duration
	}{
		{"one edit: checked once quiet", 5 * time.Second, every(0, 0, time.Second), []time.Duration{2 * time.Second}},
		{"a burst over 1.5s: one check 2s after its last edit", 8 * time.Second, every(0, 1500*time.Millisecond, 500*time.Millisecond),
			[]time.Duration{3500 * time.Millisecond}},
		// the check at 10s takes that second's edit; the next one is 10s
		// after the first edit it did not see (11s)
		{"a write every second: a check every spacing while it writes", 45 * time.Second, every(0, 30*time.Second, time.Second),
			[]time.Duration{10 * time.Second, 21 * time.Second, 32 * time.Second}},
		{"two bursts apart: one check each", 30 * time.Second, func(at time.Duration) bool { return at == 0 || at == 15*time.Second },
			[]time.Duration{2 * time.Second, 17 * time.Second}},
		{"a second burst soon after: spaced from the first check", 20 * time.Second, func(at time.Duration) bool { return at == 0 || at == 3*time.Second },
			[]time.Duration{2 * time.Second, 12 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, []mod{{name: "web"}}, nil, runstate.DriftWarn, &fakeDetector{})
			t0 := f.clock.Now()
			f.run(t0, tt.until, tt.edits)
			got := f.offsets(t0)
			if len(got) != len(tt.want) {
				t.Fatalf("checks at %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("checks at %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// An edit of a module that is not ready is checked once it is; one of a
// disabled module, or with drift checks off, is dropped.
func TestWatchWaitsForReady(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []mod{{name: "web", state: runstate.StateRunning}}, nil, runstate.DriftWarn, &fakeDetector{})
	t0 := f.clock.Now()
	f.run(t0, 20*time.Second, func(at time.Duration) bool { return at == 0 })
	if n := len(f.det.checks()); n != 0 {
		t.Fatalf("%d checks of a running module", n)
	}
	f.modules.Update("web", func(st *runstate.Module) { st.State = runstate.StateReady })
	f.run(t0, 31*time.Second, nil)
	if got := f.offsets(t0); len(got) != 1 || got[0] < 20*time.Second {
		t.Fatalf("checks after the module turned ready: %v, want one", got)
	}

	f.modules.Update("web", func(st *runstate.Module) { st.Enabled = false })
	f.run(t0, 45*time.Second, func(at time.Duration) bool { return at == 32*time.Second })
	f.modules.Update("web", func(st *runstate.Module) { st.Enabled = true })
	f.run(t0, 70*time.Second, nil)
	if n := len(f.det.checks()); n != 1 {
		t.Fatalf("%d checks, want the edit made while the module was disabled dropped", n-1)
	}

	off := newFixture(t, []mod{{name: "web"}}, nil, "", nil)
	off.c.Edited("web")
	if n := len(off.c.edits.pending); n != 0 {
		t.Fatalf("drift checks off: %d edits pending", n)
	}
}

// Run: an edit is checked after the quiet time on the injected clock; an
// edit while the loop waits with nothing pending wakes it, and is checked
// a spacing after the last check; Run returns when ctx ends.
func TestRunChecksEdits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []mod{{name: "web"}}, nil, runstate.DriftWarn, &fakeDetector{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.c.Run(ctx)
	}()
	f.c.Edited("web")
	testwait.Until(t, "the loop to wait for the quiet time", func() bool { return f.clock.LongestWait() == DefaultQuiet })
	if n := len(f.det.checks()); n != 0 {
		t.Fatalf("%d checks before the quiet time", n)
	}
	f.clock.Advance(DefaultQuiet)
	testwait.Until(t, "the edit's check", func() bool { return len(f.det.checks()) == 1 })
	// the check ran after the loop looked at what is pending: this edit
	// reaches it through its wake-up only
	f.c.Edited("web")
	testwait.Until(t, "the loop to wait for the spacing", func() bool { return f.clock.LongestWait() == DefaultSpacing })
	f.clock.Advance(DefaultSpacing)
	testwait.Until(t, "the second edit's check", func() bool { return len(f.det.checks()) == 2 })
	cancel()
	<-done
}

// Edits the health tracker tells to the inbox reach the checks on edits,
// those told before Run included (the tracker and the operator are made
// in either order: docs/architecture.md).
func TestInboxEditsReachRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []mod{{name: "web"}, {name: "db"}}, nil, runstate.DriftWarn, &fakeDetector{})
	in := NewInbox()
	f.c.opts.Inbox = in
	in.Edited("web") // before Run
	in.Edited("web")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.c.Run(ctx)
	}()
	testwait.Until(t, "the loop to wait for the quiet time", func() bool { return f.clock.LongestWait() == DefaultQuiet })
	in.Edited("db") // while it waits
	testwait.Until(t, "db's edit to be taken", func() bool {
		in.mu.Lock()
		defer in.mu.Unlock()
		return len(in.modules) == 0
	})
	f.clock.Advance(DefaultQuiet)
	testwait.Until(t, "both modules' checks", func() bool { return len(f.det.checks()) == 2 })
	cancel()
	<-done
}
