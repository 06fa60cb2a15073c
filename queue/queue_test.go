package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// instant makes every backoff wait return at once and records the delays.
type instant struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (c *instant) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.delays = append(c.delays, d)
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- time.Now()
	return ch
}

func newSet(t *testing.T) (*Set, *instant) {
	clock := &instant{}
	ctx, cancel := context.WithCancel(t.Context())
	s := NewSet(ctx, Options{RetryMin: 5 * time.Second, RetryMax: 30 * time.Second, After: clock.After})
	t.Cleanup(func() { cancel(); s.Wait() })
	return s, clock
}

// gate is a task that runs until release is closed or the queue stops.
func gate(release <-chan struct{}) func(context.Context) error {
	return func(ctx context.Context) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}
}

// waitRunning waits until the queue's head task runs.
func waitRunning(t *testing.T, s *Set) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if d := s.Dump(); len(d) > 0 && len(d[0].Tasks) > 0 && d[0].Tasks[0].Running {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("head task never ran")
}

func waitIdle(t *testing.T, q *Queue) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for q.Len() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("queue did not drain")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestBackoff(t *testing.T) {
	want := []time.Duration{5, 10, 20, 30, 30}
	for i, w := range want {
		if got := Backoff(5*time.Second, 30*time.Second, i+1); got != w*time.Second {
			t.Errorf("attempt %d: %s, want %s", i+1, got, w*time.Second)
		}
	}
}

func TestFIFORetryAtHead(t *testing.T) {
	s, clock := newSet(t)
	var mu sync.Mutex
	var order []string
	record := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	fails := 3
	q := s.Main()
	block := make(chan struct{})
	q.Add(&Task{Key: Key{Kind: "gate"}, Do: gate(block)})
	q.Add(
		&Task{Key: Key{Kind: "a"}, Do: func(context.Context) error {
			record("a")
			if fails > 0 {
				fails--
				return errors.New("boom")
			}
			return nil
		}},
		&Task{Key: Key{Kind: "b"}, Do: func(context.Context) error { record("b"); return nil }},
	)
	close(block)
	waitIdle(t, q)
	if got := strings.Join(order, ","); got != "a,a,a,a,b" {
		t.Fatalf("order = %s: a failed task must stay at the head", got)
	}
	clock.mu.Lock()
	defer clock.mu.Unlock()
	if len(clock.delays) != 3 || clock.delays[0] != 5*time.Second || clock.delays[2] != 20*time.Second {
		t.Fatalf("delays = %v", clock.delays)
	}
}

func TestAllowFailureAndAfterCurrent(t *testing.T) {
	s, _ := newSet(t)
	q := s.Main()
	var mu sync.Mutex
	var order []string
	record := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	var failures int
	q.Add(
		&Task{Key: Key{Kind: "parent"}, Do: func(context.Context) error {
			record("parent")
			q.AddAfterCurrent(&Task{Key: Key{Kind: "child"}, Do: func(context.Context) error { record("child"); return nil }})
			return nil
		}},
		&Task{Key: Key{Kind: "flaky"}, AllowFailure: true, OnFailure: func(error, int) { failures++ }, Do: func(context.Context) error {
			record("flaky")
			return errors.New("nope")
		}},
		&Task{Key: Key{Kind: "last"}, Do: func(context.Context) error { record("last"); return nil }},
	)
	waitIdle(t, q)
	if got := strings.Join(order, ","); got != "parent,child,flaky,last" || failures != 1 {
		t.Fatalf("order = %s, failures = %d", got, failures)
	}
}

func TestNamedQueuesRunIndependently(t *testing.T) {
	s, _ := newSet(t)
	blocked := make(chan struct{})
	defer close(blocked)
	s.Main().Add(&Task{Key: Key{Kind: "stuck"}, Do: gate(blocked)})
	done := make(chan struct{})
	s.Queue("other").Add(&Task{Key: Key{Kind: "free"}, Do: func(context.Context) error { close(done); return nil }})
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a named queue waited for main")
	}
}

func TestMergeAndDump(t *testing.T) {
	s, _ := newSet(t)
	q := s.Main()
	block := make(chan struct{})
	q.Add(&Task{Key: Key{Kind: "gate"}, Description: "gate", Do: gate(block)})
	waitRunning(t, s)
	events := 1
	key := Key{Kind: "hook", Hook: "h", Binding: "pods"}
	merge := func(later *Task) bool {
		if later.Key != key {
			return false
		}
		events++
		return true
	}
	q.Add(&Task{Key: key, Description: "h: pods", Merge: merge, Do: func(context.Context) error { return nil }})
	q.Add(&Task{Key: key, Description: "h: pods", Merge: merge, Do: func(context.Context) error { return nil }})
	if q.Len() != 2 || events != 2 {
		t.Fatalf("len = %d, events = %d: consecutive tasks were not merged", q.Len(), events)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/queue", nil))
	if !strings.Contains(rec.Body.String(), `Queue "main": 2 task(s)`) || !strings.Contains(rec.Body.String(), "[running] gate") {
		t.Fatalf("text dump:\n%s", rec.Body.String())
	}
	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/queue?format=json", nil))
	var dump struct{ Queues []QueueInfo }
	if err := json.Unmarshal(rec.Body.Bytes(), &dump); err != nil || len(dump.Queues) != 1 || len(dump.Queues[0].Tasks) != 2 {
		t.Fatalf("json dump %s: %v", rec.Body.String(), err)
	}
	close(block)
	waitIdle(t, q)
}

func TestPanicIsRetried(t *testing.T) {
	s, _ := newSet(t)
	q := s.Main()
	n := 0
	q.Add(&Task{Key: Key{Kind: "p"}, Do: func(context.Context) error {
		n++
		if n == 1 {
			panic("bug")
		}
		return nil
	}})
	waitIdle(t, q)
	if n != 2 {
		t.Fatalf("runs = %d", n)
	}
}

// recorder collects task names in run order.
type recorder struct {
	mu    sync.Mutex
	order []string
}

func (r *recorder) task(kind string, err error) *Task {
	return &Task{Key: Key{Kind: Kind(kind)}, Description: kind, Do: func(context.Context) error {
		r.mu.Lock()
		r.order = append(r.order, kind)
		r.mu.Unlock()
		return err
	}}
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.order, ",")
}

// After Wait, a new queue gets no worker (no WaitGroup.Add racing Wait).
func TestQueueAfterShutdown(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	s := NewSet(ctx, Options{})
	cancel()
	s.Wait()
	ran := make(chan struct{}, 1)
	s.Queue("late").Add(&Task{Key: Key{Kind: "x"}, Do: func(context.Context) error { ran <- struct{}{}; return nil }})
	select {
	case <-ran:
		t.Fatal("a queue made after shutdown ran a task")
	case <-time.After(50 * time.Millisecond):
	}
}

// Failing: a task of the queue failed and is retried; not before its first
// failure, and not once it succeeded.
func TestFailing(t *testing.T) {
	s, _ := newSet(t)
	q := s.Queue("q")
	var mu sync.Mutex
	fail := true
	failing := func() bool { mu.Lock(); defer mu.Unlock(); return fail }
	if q.Blocked() {
		t.Fatal("an empty queue is failing")
	}
	q.Add(&Task{Key: Key{Kind: "flaky"}, Do: func(context.Context) error {
		if failing() {
			return errors.New("boom")
		}
		return nil
	}})
	deadline := time.Now().Add(10 * time.Second)
	for !q.Blocked() {
		if time.Now().After(deadline) {
			t.Fatal("a failed task does not make its queue failing")
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	waitIdle(t, q)
	if q.Blocked() {
		t.Fatal("failing after the task succeeded")
	}
}

// A terminal error drops its task after one attempt, through OnFailure;
// any other error retries it at the head with backoff.
func TestTerminalAndRetryableErrors(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name  string
		err   error
		runs  int
		delay bool // a backoff wait was asked for
	}{
		{"plain", boom, 2, true},
		{"retryable", Retryable("Flaky", boom), 2, true},
		{"terminal", Terminal("ReleaseConflict", boom), 1, false},
		{"terminal, wrapped", fmt.Errorf("module a: %w", Terminal("ValuesRefused", boom)), 1, false},
		{"joined: one part retryable", errors.Join(Terminal("ReleaseConflict", boom), boom), 2, true},
		{"joined: every part terminal", errors.Join(Terminal("ReleaseConflict", boom), Terminal("ValuesRefused", boom)), 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, clock := newSet(t)
			q := s.Main()
			r := &recorder{}
			runs := 0
			var reported []error
			task := &Task{Key: Key{Kind: "run"}, Description: "run",
				OnFailure: func(err error, _ int) { reported = append(reported, err) },
				Do: func(context.Context) error {
					runs++
					if runs == 1 {
						return tt.err
					}
					return nil
				}}
			q.Add(task, r.task("tail", nil))
			waitIdle(t, q)
			if runs != tt.runs || len(reported) != 1 || r.String() != "tail" {
				t.Fatalf("runs = %d, failures reported %v, after it %q", runs, reported, r.String())
			}
			clock.mu.Lock()
			delayed := len(clock.delays) > 0
			clock.mu.Unlock()
			if delayed != tt.delay {
				t.Fatalf("backoff asked for: %v, want %v", delayed, tt.delay)
			}
		})
	}
	if got := Reason(fmt.Errorf("x: %w", Terminal("TreeRefused", boom))); got != "TreeRefused" {
		t.Fatalf("Reason = %q", got)
	}
	if Terminal("x", nil) != nil || Retryable("x", nil) != nil {
		t.Fatal("a nil error was marked")
	}
}

// TestHasQueuedKey: a waiting task is found by its whole key (a drift
// correction of one module, not another's); a running one is not waiting.
func TestHasQueuedKey(t *testing.T) {
	s, _ := newSet(t)
	q := s.Main()
	block := make(chan struct{})
	running := Key{Kind: "DriftCorrect", Module: "web"}
	q.Add(&Task{Key: running, Do: gate(block)})
	waitRunning(t, s)
	q.Add(&Task{Key: Key{Kind: "DriftCorrect", Module: "echo"}, Do: func(context.Context) error { return nil }})
	for _, tc := range []struct {
		key  Key
		want bool
	}{
		{Key{Kind: "DriftCorrect", Module: "echo"}, true},
		{Key{Kind: "DriftCorrect", Module: "other"}, false},
		{Key{Kind: "ModuleRun", Module: "echo"}, false},
		{running, false},
	} {
		if got := q.HasQueuedKey(tc.key); got != tc.want {
			t.Errorf("HasQueuedKey(%+v) = %v, want %v", tc.key, got, tc.want)
		}
	}
	close(block)
	waitIdle(t, q)
}
