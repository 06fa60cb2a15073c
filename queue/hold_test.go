package queue

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A task that returns a WaitError is held at the head: what is behind it
// waits, a preempting task runs at once meanwhile (and one that supersedes
// it drops it), the dump says what it waits for, and its wake runs it
// again. A hold is not a failure: no OnFailure, no attempts, no backoff,
// OnStart once.
func TestHeldTask(t *testing.T) {
	tests := []struct {
		name string
		// act runs while the task is held; wake is its wake channel
		act  func(t *testing.T, q *Queue, r *recorder, wake chan struct{})
		want string
		// tasks is how many distinct tasks ran (OnStart is told once each)
		tasks int32
	}{
		{
			name: "wake runs it again, then the tail",
			act:  func(t *testing.T, q *Queue, r *recorder, wake chan struct{}) { close(wake) },
			want: "wait,wait,tail", tasks: 2,
		},
		{
			name: "a preempting task runs while it is held",
			act: func(t *testing.T, q *Queue, r *recorder, wake chan struct{}) {
				q.Preempt(r.task("fix", nil), nil)
				waitFor(t, "the preempting task", func() bool { return strings.HasSuffix(r.String(), "fix") })
				close(wake)
			},
			want: "wait,fix,wait,tail", tasks: 3,
		},
		{
			name: "a superseding task drops it",
			act: func(t *testing.T, q *Queue, r *recorder, wake chan struct{}) {
				q.Preempt(r.task("reload", nil), func(k Key) bool { return k.Kind == "wait" || k.Kind == "tail" })
			},
			want: "wait,reload", tasks: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			var starts, failures atomic.Int32
			s := NewSet(ctx, Options{RetryMin: time.Hour, RetryMax: time.Hour,
				OnStart: func(string, *Task, time.Duration) { starts.Add(1) }})
			t.Cleanup(func() { cancel(); s.Wait() })
			q := s.Main()
			r := &recorder{}
			wake := make(chan struct{})
			var runs atomic.Int32
			held := r.task("wait", nil)
			do := held.Do
			held.Do = func(ctx context.Context) error {
				_ = do(ctx)
				if runs.Add(1) == 1 {
					return Wait("module a to be Healthy", wake, nil)
				}
				return nil
			}
			held.OnFailure = func(error, int) { failures.Add(1) }
			q.Add(held, r.task("tail", nil))
			waitFor(t, "the hold", func() bool { return q.Blocked() })
			d := s.Dump()[0].Tasks[0]
			if d.Held != "module a to be Healthy" || d.HeldSince == nil || d.Attempts != 0 || d.LastError != "" {
				t.Fatalf("dump of the held task = %+v", d)
			}
			if r.String() != "wait" {
				t.Fatalf("ran %s while the head task was held", r.String())
			}
			tt.act(t, q, r, wake)
			waitIdle(t, q)
			if got := r.String(); got != tt.want {
				t.Fatalf("order = %s, want %s", got, tt.want)
			}
			if failures.Load() != 0 {
				t.Fatal("a hold was told as a failure")
			}
			if got := starts.Load(); got != tt.tasks {
				t.Fatalf("OnStart told %d times, want %d (once per task)", got, tt.tasks)
			}
		})
	}
}

// A held task with a timeout runs again when it fires; the timeout is the
// clock's, not a backoff.
func TestHeldTaskTimeout(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	s := NewSet(ctx, Options{RetryMin: time.Hour, RetryMax: time.Hour})
	t.Cleanup(func() { cancel(); s.Wait() })
	q := s.Main()
	timeout := make(chan time.Time, 1)
	var mu sync.Mutex
	runs := 0
	q.Add(&Task{Key: Key{Kind: "wait"}, Do: func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if runs++; runs == 1 {
			return Wait("x", nil, timeout)
		}
		return nil
	}})
	waitFor(t, "the hold", func() bool { return q.Blocked() })
	timeout <- time.Now()
	waitIdle(t, q)
	if runs != 2 {
		t.Fatalf("runs = %d, want 2", runs)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
