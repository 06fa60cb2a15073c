package queue

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// The tests of pre-emption and superseding (docs/architecture.md, "Tasks:
// keys and errors"); the helpers are queue_test.go's.

// A preempting task runs at once ahead of a task waiting out a long
// backoff, and drops what it supersedes; tasks added at the tail wait.
func TestPreemptEndsBackoff(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	s := NewSet(ctx, Options{RetryMin: time.Hour, RetryMax: time.Hour})
	t.Cleanup(func() { cancel(); s.Wait() })
	q := s.Main()
	r := &recorder{}
	q.Add(r.task("broken", errors.New("boom")), r.task("tail", nil))
	deadline := time.Now().Add(10 * time.Second)
	for r.String() != "broken" {
		if time.Now().After(deadline) {
			t.Fatal("the failing task did not run")
		}
		time.Sleep(time.Millisecond)
	}
	done := make(chan struct{})
	fix := r.task("fix", nil)
	fixDo := fix.Do
	fix.Do = func(ctx context.Context) error { defer close(done); return fixDo(ctx) }
	q.Preempt(fix, func(k Key) bool { return k.Kind == "broken" })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the preempting task waited for the failing task's backoff")
	}
	waitIdle(t, q)
	if got := r.String(); got != "broken,fix,tail" {
		t.Fatalf("order = %s", got)
	}
}

// A task preempting a running task that then fails runs before its retry;
// preempting tasks keep their order; one that supersedes the running task
// drops it when it fails.
func TestPreemptRunningTask(t *testing.T) {
	for _, tc := range []struct {
		name       string
		supersedes func(Key) bool
		want       string
	}{
		{"retried after", nil, "running,p1,p2,running,tail"},
		{"superseded", func(k Key) bool { return k.Kind == "running" }, "running,p1,p2,tail"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newSet(t)
			q := s.Main()
			r := &recorder{}
			release := make(chan struct{})
			failed := false
			running := r.task("running", nil)
			runDo := running.Do
			running.Do = func(ctx context.Context) error {
				_ = runDo(ctx)
				if !failed {
					failed = true
					<-release
					return errors.New("boom")
				}
				return nil
			}
			q.Add(running, r.task("tail", nil))
			waitRunning(t, s)
			q.Preempt(r.task("p1", nil), tc.supersedes)
			q.Preempt(r.task("p2", nil), nil)
			close(release)
			waitIdle(t, q)
			if got := r.String(); got != tc.want {
				t.Fatalf("order = %s, want %s", got, tc.want)
			}
		})
	}
}

// A preempting task that itself keeps failing does not block the next one.
func TestPreemptedFailureYields(t *testing.T) {
	s, _ := newSet(t)
	q := s.Main()
	r := &recorder{}
	block := make(chan struct{})
	q.Add(&Task{Key: Key{Kind: "gate"}, Do: gate(block)})
	waitRunning(t, s)
	fails := 2
	bad := r.task("bad", nil)
	bad.Do = func(context.Context) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.order = append(r.order, "bad")
		if fails > 0 {
			fails--
			return errors.New("boom")
		}
		return nil
	}
	q.Preempt(bad, nil)
	close(block)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.HasPrefix(r.String(), "bad") {
		if time.Now().After(deadline) {
			t.Fatal("bad never ran")
		}
		time.Sleep(time.Millisecond)
	}
	q.Preempt(r.task("next", nil), nil)
	waitIdle(t, q)
	if got := r.String(); !strings.Contains(got, "next") || strings.Count(got, "bad") != 3 {
		t.Fatalf("order = %s", got)
	}
}

// Follow-up work of the running task goes after the changes that
// pre-empted it, and what those supersede is not added.
func TestAfterCurrentBehindPreempting(t *testing.T) {
	s, _ := newSet(t)
	q := s.Main()
	r := &recorder{}
	release := make(chan struct{})
	running := r.task("running", nil)
	runDo := running.Do
	running.Do = func(ctx context.Context) error {
		_ = runDo(ctx)
		<-release
		q.AddAfterCurrent(r.task("follow-up", nil), r.task("stale", nil))
		return nil
	}
	q.Add(running)
	waitRunning(t, s)
	q.Preempt(r.task("change", nil), func(k Key) bool { return k.Kind == "stale" })
	close(release)
	waitIdle(t, q)
	if got := r.String(); got != "running,change,follow-up" {
		t.Fatalf("order = %s", got)
	}
}

// A pre-empting task's own follow-up work is kept, even work of the kind
// it supersedes.
func TestPreemptingTaskKeepsItsFollowUps(t *testing.T) {
	s, _ := newSet(t)
	q := s.Main()
	r := &recorder{}
	reload := r.task("reload", nil)
	reloadDo := reload.Do
	reload.Do = func(ctx context.Context) error {
		_ = reloadDo(ctx)
		q.AddAfterCurrent(r.task("step", nil))
		return nil
	}
	q.Preempt(reload, func(k Key) bool { return k.Kind == "step" })
	waitIdle(t, q)
	if got := r.String(); got != "reload,step" {
		t.Fatalf("order = %s", got)
	}
}

// groupTask runs its members' work in one task (a weight group's module
// runs): Drop removes a member, as lifecycle's does.
func (r *recorder) groupTask(kind Kind, members ...string) *Task {
	t := &Task{Key: Key{Kind: "group"}}
	for _, m := range members {
		t.Members = append(t.Members, Key{Kind: kind, Module: m})
	}
	left := members
	t.Drop = func(k Key) {
		left = slices.DeleteFunc(slices.Clone(left), func(m string) bool { return m == k.Module })
	}
	t.Do = func(context.Context) error {
		r.mu.Lock()
		r.order = append(r.order, "group("+strings.Join(left, "+")+")")
		r.mu.Unlock()
		return nil
	}
	return t
}

// Superseding works on keys, wherever the superseded work waits: alone,
// or as a member of a task that runs several (issue #21's double run: a
// module's edit while its weight group waited ran the module twice).
func TestPreemptSupersedesByKey(t *testing.T) {
	run := func(module string) Key { return Key{Kind: "run", Module: module} }
	tests := []struct {
		name    string
		waiting func(r *recorder) []*Task
		want    string
	}{
		{"alone", func(r *recorder) []*Task {
			a, b := r.task("a", nil), r.task("b", nil)
			a.Key, b.Key = run("a"), run("b")
			return []*Task{a, b}
		}, "gate,change,b"},
		{"a member of a group", func(r *recorder) []*Task {
			return []*Task{r.groupTask("run", "a", "b")}
		}, "gate,change,group(b)"},
		{"every member of a group", func(r *recorder) []*Task {
			return []*Task{r.groupTask("run", "a"), r.task("tail", nil)}
		}, "gate,change,tail"},
		{"another kind with the module's name", func(r *recorder) []*Task {
			return []*Task{r.groupTask("delete", "a")}
		}, "gate,change,group(a)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newSet(t)
			q := s.Main()
			r := &recorder{}
			release := make(chan struct{})
			g := r.task("gate", nil)
			gDo := g.Do
			g.Do = func(ctx context.Context) error { _ = gDo(ctx); <-release; return nil }
			q.Add(g)
			waitRunning(t, s)
			q.Add(tt.waiting(r)...)
			q.Preempt(r.task("change", nil), func(k Key) bool { return k == run("a") })
			close(release)
			waitIdle(t, q)
			if got := r.String(); got != tt.want {
				t.Fatalf("order = %s, want %s", got, tt.want)
			}
		})
	}
}

// A change that supersedes one member of a running group task that then
// fails drops that member from the retry; the others are retried.
func TestPreemptSupersedesMemberOfFailingGroup(t *testing.T) {
	s, _ := newSet(t)
	q := s.Main()
	r := &recorder{}
	release := make(chan struct{})
	g := r.groupTask("run", "a", "b")
	groupDo, attempts := g.Do, 0
	g.Do = func(ctx context.Context) error {
		_ = groupDo(ctx)
		if attempts++; attempts == 1 {
			<-release
			return errors.New("boom")
		}
		return nil
	}
	q.Add(g)
	waitRunning(t, s)
	q.Preempt(r.task("change", nil), func(k Key) bool { return k == Key{Kind: "run", Module: "a"} })
	close(release)
	waitIdle(t, q)
	if got := r.String(); got != "group(a+b),change,group(b)" {
		t.Fatalf("order = %s", got)
	}
}
