package commitstatus

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/addonops/addon-operator/internal/forgetest"
	"github.com/addonops/addon-operator/internal/testclock"
)

// manualClock moves only when the test advances it.
type manualClock = testclock.Manual

func newManualClock() *manualClock { return testclock.New() }

// harness is a Notifier posting through the GitHub provider to a forge,
// on a manual clock.
type harness struct {
	t     *testing.T
	forge *forgetest.Server
	clock *manualClock
	n     *Notifier
}

func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	forge := forgetest.New("tok")
	t.Cleanup(forge.Close)
	gh, err := NewGitHub(GitHubOptions{BaseURL: forge.GitHubURL(), Repository: "o/r", TokenFile: writeFile(t, "token", "tok"), AllowHTTP: local})
	if err != nil {
		t.Fatal(err)
	}
	clock := newManualClock()
	opts.Provider, opts.Now, opts.After = gh, clock.Now, clock.After
	opts.Logger = slog.New(slog.DiscardHandler)
	if opts.Cluster == "" {
		opts.Cluster = "prod"
	}
	n, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, forge: forge, clock: clock, n: n}
}

// run starts the worker until the test ends, and checks that it stops.
func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.n.Run(ctx); close(done) }()
	h.t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			h.t.Error("the worker did not stop on cancel")
		}
	})
}

// eventually polls cond for up to 5 s of real time.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; forge holds %+v", what, h.forge.Statuses())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// idle waits until the worker sleeps on the clock for d, with nothing in flight.
func (h *harness) idle(d time.Duration) {
	h.t.Helper()
	h.eventually(fmt.Sprintf("the worker to wait %s", d), func() bool { return h.clock.LongestWait() == d })
}

func (h *harness) states() []string {
	var out []string
	for _, s := range h.forge.Statuses() {
		out = append(out, s.Commit[:4]+" "+s.Context+" "+s.State)
	}
	return out
}

func commit(i int) string { return fmt.Sprintf("%04d", i) + sha[4:] }

func (h *harness) want(states ...string) {
	h.t.Helper()
	h.eventually(fmt.Sprintf("%v", states), func() bool { return fmt.Sprint(h.states()) == fmt.Sprint(states) })
}

func TestNotifierDeduplicates(t *testing.T) {
	h := newHarness(t, Options{})
	h.run()
	c := commit(1)
	h.n.Report(Report{Commit: c, State: Applying})
	h.want("0001 addon-operator/prod pending")
	for range 3 {
		h.n.Report(Report{Commit: c, State: Applied})
	}
	h.want("0001 addon-operator/prod pending", "0001 addon-operator/prod success")
	h.n.Report(Report{Commit: c, State: Applied})
	h.n.Report(Report{Commit: "", State: Applied})                // no git: nothing to post to
	h.n.Report(Report{Commit: c, Module: "alpha", State: Failed}) // per-module is off
	time.Sleep(50 * time.Millisecond)
	if n := h.forge.Requests(); n != 2 {
		t.Fatalf("forge got %d requests, want 2: %v", n, h.states())
	}
	// a changed state of the same commit is posted, and so is a change back
	h.n.Report(Report{Commit: c, State: Failed, Reason: "module alpha failed"})
	h.n.Report(Report{Commit: c, State: Failed, Reason: "module alpha failed"})
	h.want("0001 addon-operator/prod pending", "0001 addon-operator/prod success", "0001 addon-operator/prod failure")
	h.n.Report(Report{Commit: c, State: Applied})
	h.want("0001 addon-operator/prod pending", "0001 addon-operator/prod success", "0001 addon-operator/prod failure", "0001 addon-operator/prod success")
	if d := h.forge.Statuses()[2].Description; d != "failed on prod: module alpha failed" {
		t.Fatalf("description = %q", d)
	}
}

func TestNotifierPerModule(t *testing.T) {
	h := newHarness(t, Options{PerModule: true})
	h.run()
	h.n.Report(Report{Commit: commit(1), Module: "alpha", State: Applied})
	h.n.Report(Report{Commit: commit(1), State: Applied})
	h.want("0001 addon-operator/prod/alpha success", "0001 addon-operator/prod success")
}

// TestNotifierRateLimitAndCoalesce: a burst passes, then one post per
// token; reports of one commit and context waiting meanwhile collapse
// into the newest.
func TestNotifierRateLimitAndCoalesce(t *testing.T) {
	h := newHarness(t, Options{Rate: rate.Every(10 * time.Second), Burst: 2})
	h.run()
	for i := 1; i <= 3; i++ {
		h.n.Report(Report{Commit: commit(i), State: Applying})
	}
	h.want("0001 addon-operator/prod pending", "0002 addon-operator/prod pending")
	h.idle(10 * time.Second)
	// commit 3 waits for a token; its later states replace its pending one
	h.n.Report(Report{Commit: commit(3), State: Failed})
	h.n.Report(Report{Commit: commit(3), State: Applied})
	h.n.Report(Report{Commit: commit(4), State: Applying})
	if p := h.n.Pending(); p != 2 {
		t.Fatalf("pending = %d, want 2 (one per commit)", p)
	}
	h.clock.Advance(9 * time.Second)
	time.Sleep(50 * time.Millisecond)
	if n := h.forge.Requests(); n != 2 {
		t.Fatalf("posted before the token: %v", h.states())
	}
	h.clock.Advance(time.Second)
	h.want("0001 addon-operator/prod pending", "0002 addon-operator/prod pending", "0003 addon-operator/prod success")
	h.idle(10 * time.Second)
	h.clock.Advance(10 * time.Second)
	h.want("0001 addon-operator/prod pending", "0002 addon-operator/prod pending", "0003 addon-operator/prod success", "0004 addon-operator/prod pending")
}

func TestNotifierRetries(t *testing.T) {
	tests := []struct {
		name     string
		failures []forgetest.Failure
		// waits are the delays the worker asks for before each retry
		waits       []time.Duration
		maxAttempts int
		posted      bool
		requests    int
	}{
		{"5xx backs off doubling", []forgetest.Failure{{Code: 502}, {Code: 503}, {Code: 500}},
			[]time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, 5, true, 4},
		{"429 honours Retry-After", []forgetest.Failure{{Code: 429, RetryAfter: "30"}},
			[]time.Duration{30 * time.Second}, 5, true, 2},
		{"Retry-After below the backoff", []forgetest.Failure{{Code: 503, RetryAfter: "1"}, {Code: 503, RetryAfter: "1"}},
			[]time.Duration{time.Second, 2 * time.Second}, 5, true, 3},
		{"4xx is terminal", []forgetest.Failure{{Code: 422, Body: `{"message":"Validation Failed"}`}}, nil, 5, false, 1},
		{"404 is terminal", []forgetest.Failure{{Code: 404}}, nil, 5, false, 1},
		{"gives up after MaxAttempts", []forgetest.Failure{{Code: 500}, {Code: 500}, {Code: 500}},
			[]time.Duration{time.Second, 2 * time.Second}, 3, false, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Options{RetryMin: time.Second, RetryMax: time.Minute, MaxAttempts: tt.maxAttempts})
			h.forge.Fail(tt.failures...)
			h.run()
			h.n.Report(Report{Commit: commit(1), State: Applied})
			for i, w := range tt.waits {
				h.eventually(fmt.Sprintf("attempt %d", i+1), func() bool { return h.forge.Requests() == i+1 })
				h.idle(w)
				h.clock.Advance(w - time.Millisecond)
				time.Sleep(20 * time.Millisecond)
				if n := h.forge.Requests(); n != i+1 {
					t.Fatalf("retried before %s: %d requests", w, n)
				}
				h.clock.Advance(time.Millisecond)
			}
			h.eventually("the last attempt", func() bool { return h.forge.Requests() == tt.requests })
			time.Sleep(50 * time.Millisecond)
			if n := h.forge.Requests(); n != tt.requests {
				t.Fatalf("requests = %d, want %d", n, tt.requests)
			}
			if got := len(h.forge.Statuses()) == 1; got != tt.posted {
				t.Fatalf("posted = %v, want %v", got, tt.posted)
			}
			if !tt.posted {
				// not remembered as posted: the same state is tried again when reported
				h.n.Report(Report{Commit: commit(1), State: Applied})
				h.want("0001 addon-operator/prod success")
			}
		})
	}
}

// TestNotifierRetryAfterPausesAll: a 429 holds every post, not only the
// one it answered.
func TestNotifierRetryAfterPausesAll(t *testing.T) {
	h := newHarness(t, Options{RetryMin: time.Second})
	h.forge.Fail(forgetest.Failure{Code: 429, RetryAfter: "60"})
	h.run()
	h.n.Report(Report{Commit: commit(1), State: Applied})
	h.eventually("the 429", func() bool { return h.forge.Requests() == 1 })
	h.idle(60 * time.Second)
	// the report wakes the worker, which sleeps again: the clock moves
	// only once it does, or its new wait would start from the moved clock
	waiting := h.clock.Waiting()
	h.n.Report(Report{Commit: commit(2), State: Applied})
	h.eventually("the worker to sleep again", func() bool { return h.clock.Waiting() == waiting+1 })
	h.idle(60 * time.Second)
	h.clock.Advance(59 * time.Second)
	time.Sleep(50 * time.Millisecond)
	if n := h.forge.Requests(); n != 1 {
		t.Fatalf("posted during the pause: %d requests", n)
	}
	h.clock.Advance(time.Second)
	h.eventually("both posted", func() bool { return len(h.forge.Statuses()) == 2 })
}

// TestNotifierFullQueue: Report never blocks; a full queue drops the
// oldest waiting report and keeps the newest.
func TestNotifierFullQueue(t *testing.T) {
	h := newHarness(t, Options{QueueSize: 3})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= 100; i++ {
			h.n.Report(Report{Commit: commit(i), State: Applying})
		}
		h.n.Report(Report{Commit: commit(100), State: Applied}) // replaces its own
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Report blocked without a worker")
	}
	if p, d := h.n.Pending(), h.n.Dropped(); p != 3 || d != 97 {
		t.Fatalf("pending %d, dropped %d; want 3, 97", p, d)
	}
	h.run()
	h.want("0098 addon-operator/prod pending", "0099 addon-operator/prod pending", "0100 addon-operator/prod success")
}

// heldProvider records posts and holds each until the test releases it.
type heldProvider struct {
	mu      sync.Mutex
	posted  []State
	release chan struct{}
	started chan struct{}
}

func (p *heldProvider) Post(ctx context.Context, s Status) error {
	p.started <- struct{}{}
	select {
	case <-p.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.posted = append(p.posted, s.State)
	return nil
}

// TestNotifierReportDuringPost: a report that matches what was posted
// before, arriving while another state of its key is being posted, is
// still posted after it; the newest state is what the forge ends with.
func TestNotifierReportDuringPost(t *testing.T) {
	p := &heldProvider{release: make(chan struct{}), started: make(chan struct{}, 10)}
	n, err := New(Options{Provider: p, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	c := commit(1)
	n.Report(Report{Commit: c, State: Applied})
	<-p.started
	p.release <- struct{}{}
	n.Report(Report{Commit: c, State: Failed})
	<-p.started // failure in flight
	n.Report(Report{Commit: c, State: Applied})
	p.release <- struct{}{}
	select {
	case <-p.started:
	case <-time.After(5 * time.Second):
		t.Fatal("the newest state was not posted after the one in flight")
	}
	p.release <- struct{}{}
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		got := fmt.Sprint(p.posted)
		p.mu.Unlock()
		if got == "[applied failed applied]" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("posted %s", got)
		}
		time.Sleep(time.Millisecond)
	}
}

var _ Provider = (*heldProvider)(nil)

// SetRing: the reports queued after it carry the new ring, none after
// SetRing(nil) (the running revision's config in git left the rollout).
func TestNotifierSetRing(t *testing.T) {
	h := newHarness(t, Options{})
	h.run()
	one := 1
	h.n.SetRing(&one)
	one = 7 // SetRing keeps its own copy
	h.n.Report(Report{Commit: commit(1), State: Applied})
	h.n.SetRing(nil)
	h.n.Report(Report{Commit: commit(2), State: Applied})
	h.eventually("two statuses", func() bool { return len(h.forge.Statuses()) == 2 })
	got := h.forge.Statuses()
	if !strings.HasPrefix(got[0].Description, "[ring 1] applied") || strings.HasPrefix(got[1].Description, "[ring") {
		t.Fatalf("descriptions %q, %q: want ring 1, then none", got[0].Description, got[1].Description)
	}
}
