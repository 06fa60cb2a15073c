package lifecycle

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/addonops/addon-operator/internal/testclock"
)

// manualClock is a clock that moves only when the test advances it.
type manualClock = testclock.Manual

func newManualClock() *manualClock { return testclock.New() }

// A schedule fires on the operator's clock: once per activation reached,
// never before, and not after it was removed or stopped.
func TestSchedulesOnInjectedClock(t *testing.T) {
	clock := newManualClock()
	s := newSchedules(clock.Now, clock.After)
	s.start(t.Context())
	every10s, err := cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow).Parse("*/10 * * * * *")
	if err != nil {
		t.Fatal(err)
	}
	var fired atomic.Int64
	fires := make(chan struct{}, 10)
	s.set(map[string]scheduled{"k": {every10s, func() { fired.Add(1); fires <- struct{}{} }}})
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor("the entry to wait", func() bool { return clock.Waiting() == 1 })
	clock.Advance(9 * time.Second)
	if fired.Load() != 0 {
		t.Fatal("fired before its activation")
	}
	clock.Advance(time.Second)
	<-fires
	waitFor("the next wait", func() bool { return clock.Waiting() == 1 })
	clock.Advance(10 * time.Second)
	<-fires
	if n := fired.Load(); n != 2 {
		t.Fatalf("fired %d times", n)
	}
	s.set(nil)
	s.stop()
	clock.Advance(time.Minute)
	if n := fired.Load(); n != 2 {
		t.Fatalf("a removed schedule fired: %d", n)
	}
}

// A schedule with no activation (30 February) never fires and does not spin.
func TestScheduleWithoutActivation(t *testing.T) {
	clock := newManualClock()
	s := newSchedules(clock.Now, clock.After)
	s.start(t.Context())
	never, err := cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow).Parse("0 0 0 30 2 *")
	if err != nil {
		t.Fatal(err)
	}
	var fired atomic.Int64
	s.set(map[string]scheduled{"never": {never, func() { fired.Add(1) }}})
	s.stop()
	if n := fired.Load(); n != 0 {
		t.Fatalf("fired %d times", n)
	}
}
