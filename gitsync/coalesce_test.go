package gitsync

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

type fakeTimer struct {
	d  time.Duration
	ch chan time.Time
}

// fakeClock hands the test every timer Coalesce starts; a timer fires
// when the test says so.
func fakeClock() (func(time.Duration) <-chan time.Time, chan fakeTimer) {
	timers := make(chan fakeTimer, 16)
	return func(d time.Duration) <-chan time.Time {
		t := fakeTimer{d: d, ch: make(chan time.Time, 1)}
		timers <- t
		return t.ch
	}, timers
}

// TestCoalesce walks one Coalesce through bursts of triggers; synctest.Wait
// lets every goroutine settle before each check, so nothing sleeps.
func TestCoalesce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel() // a failed step leaves nothing blocked behind
		after, timers := fakeClock()
		var runs atomic.Int32
		release := make(chan struct{})
		fn := func(ctx context.Context) {
			runs.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		trigger := Coalesce(ctx, time.Minute, fn, CoalesceAfter(after))
		var timer fakeTimer
		fire := func() {
			select {
			case timer = <-timers:
			default:
				t.Fatal("no interval timer started")
			}
			if timer.d != time.Minute {
				t.Fatalf("timer of %v, want 1m", timer.d)
			}
			timer.ch <- time.Now()
		}
		steps := []struct {
			name     string
			do       func()
			wantRuns int32
		}{
			{name: "idle", do: func() {}, wantRuns: 0},
			{name: "first trigger runs at once", do: trigger, wantRuns: 1},
			{name: "burst while running", do: func() { trigger(); trigger(); trigger() }, wantRuns: 1},
			{name: "run ends, the interval is not over", do: func() { release <- struct{}{} }, wantRuns: 1},
			{name: "more while waiting", do: func() { trigger(); trigger() }, wantRuns: 1},
			{name: "interval over: one run for all of them", do: fire, wantRuns: 2},
			{name: "that run ends: nothing pending", do: func() { release <- struct{}{} }, wantRuns: 2},
			{name: "interval over, idle", do: fire, wantRuns: 2},
			{name: "a trigger after a quiet interval runs at once", do: trigger, wantRuns: 3},
			{name: "run ends", do: func() { release <- struct{}{} }, wantRuns: 3},
			{name: "stopped", do: func() { cancel(); trigger() }, wantRuns: 3},
		}
		for _, st := range steps {
			st.do()
			synctest.Wait()
			if got := runs.Load(); got != st.wantRuns {
				t.Fatalf("%s: %d runs, want %d", st.name, got, st.wantRuns)
			}
		}
		// synctest.Test fails if Coalesce's goroutine outlives ctx
	})
}

// A Coalesce waiting out its interval stops with ctx, without running.
func TestCoalesceStopsWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		var runs atomic.Int32
		trigger := Coalesce(ctx, time.Hour, func(context.Context) { runs.Add(1) })
		trigger()
		synctest.Wait()
		trigger()
		synctest.Wait()
		cancel()
		synctest.Wait()
		if n := runs.Load(); n != 1 {
			t.Fatalf("%d runs, want 1", n)
		}
	})
}

// With the real clock (synctest's), runs are minInterval apart however
// often trigger is called.
func TestCoalesceInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var mu sync.Mutex
		var starts []time.Time
		trigger := Coalesce(ctx, time.Second, func(context.Context) {
			mu.Lock()
			defer mu.Unlock()
			starts = append(starts, time.Now())
		})
		for range 50 {
			trigger()
			time.Sleep(100 * time.Millisecond)
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(starts) < 4 || len(starts) > 6 {
			t.Fatalf("%d runs in 5s, want about 5", len(starts))
		}
		for i := 1; i < len(starts); i++ {
			if gap := starts[i].Sub(starts[i-1]); gap < time.Second {
				t.Fatalf("runs %d and %d %v apart, want at least 1s", i-1, i, gap)
			}
		}
	})
}
