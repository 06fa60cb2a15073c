package webhookrun

import (
	"context"
	"errors"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"

	"github.com/addonops/addon-operator/internal/testclock"
	"github.com/addonops/addon-operator/internal/testwait"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/webhook"
)

// start runs w until the test ends.
func start(t *testing.T, w *Webhooks) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// applied is the next registration's webhook names.
func applied(t *testing.T, reg *fakeRegistrar, what string) string {
	t.Helper()
	select {
	case b := <-reg.applied:
		return names(b)
	case <-time.After(10 * time.Second):
		t.Fatalf("no registration: %s", what)
		return ""
	}
}

func noneApplied(t *testing.T, reg *fakeRegistrar, what string) {
	t.Helper()
	select {
	case b := <-reg.applied:
		t.Fatalf("%s registered %s", what, names(b))
	default:
	}
}

// TestRunFollowsAnnouncedChanges: with nothing else calling, a new running
// tree or a module's enabled state re-registers; while nothing changes,
// the loop waits on one timer only, the rewrite a minute out (no poll),
// and a change that moves no binding registers nothing.
func TestRunFollowsAnnouncedChanges(t *testing.T) {
	t.Parallel()
	global := func(names ...string) []*loader.Hook {
		var a []loader.AdmissionBinding
		for _, n := range names {
			a = append(a, validating(n, admissionregv1.Fail))
		}
		return []*loader.Hook{hookOf("global/hooks/g.sh", "", a)}
	}
	guard := map[string][]*loader.Hook{"guard": {hookOf("guard/hooks/v.sh", "guard", []loader.AdmissionBinding{validating("guard.example.com", admissionregv1.Fail)})}}
	trees, modules := state(modelOf(global("a.example.com"), guard), []string{})
	clock := testclock.New()
	reg := &fakeRegistrar{applied: make(chan webhook.Bindings, 16)}
	w := New(Options{Logger: quiet(), Trees: trees, Modules: modules, Registrar: reg, Now: clock.Now, After: clock.After})
	start(t, w)

	if got := applied(t, reg, "start"); got != "a.example.com" {
		t.Fatalf("at start: %q", got)
	}
	parked(t, clock, RewriteEvery)
	if n := clock.Waiting(); n != 1 {
		t.Fatalf("%d waits after the first registration, want the rewrite's only", n)
	}
	// nothing changes for almost a minute: nothing is due, nothing runs
	clock.Advance(RewriteEvery - time.Second)
	// the rewrite's timer still waits, the same one: nothing fired, so the
	// loop did not run (an immediate look at the registrar could not tell)
	if n, d := clock.Waiting(), clock.LongestWait(); n != 1 || d != time.Second {
		t.Fatalf("after an unchanged minute: %d waits, the longest %s; want the rewrite's only, due in 1s", n, d)
	}
	noneApplied(t, reg, "an unchanged minute")

	steps := []struct {
		name   string
		change func()
		want   string
	}{
		{name: "a new running tree", change: func() {
			trees.Start(&runstate.Tree{Model: modelOf(global("a.example.com", "b.example.com"), guard)})
		}, want: "a.example.com,b.example.com"},
		{name: "the module enabled", change: func() { enable(modules, "guard") },
			want: "a.example.com,b.example.com,guard.example.com"},
		{name: "the module disabled", change: func() { enable(modules) },
			want: "a.example.com,b.example.com"},
	}
	for _, s := range steps {
		s.change()
		if got := applied(t, reg, s.name); got != s.want {
			t.Fatalf("%s: registered %q, want %q", s.name, got, s.want)
		}
		parked(t, clock, RewriteEvery)
	}

	// a module's state moving (a reload's Running, Ready) moves no
	// binding: the next registration is the tree's that follows it
	listens := func() int { reg.mu.Lock(); defer reg.mu.Unlock(); return reg.listens }
	before := listens()
	modules.SetState("guard", runstate.StateRunning, nil)
	testwait.Until(t, "a sync on the module's change", func() bool { return listens() > before })
	before = reg.applies()
	trees.Start(&runstate.Tree{Model: modelOf(global("c.example.com"), guard)})
	if got := applied(t, reg, "the tree after a module's state"); got != "c.example.com" || reg.applies() != before+1 {
		t.Fatalf("after a module's state and a tree: registered %q (%d registrations, want %d)", got, reg.applies(), before+1)
	}
	parked(t, clock, RewriteEvery)

	// a minute after the last registration, the same bindings are
	// written again (a configuration edited behind the operator's back)
	clock.Advance(RewriteEvery)
	if got := applied(t, reg, "the rewrite"); got != "c.example.com" {
		t.Fatalf("rewrite: %q", got)
	}
}

// TestRunRetriesWithBackoff: a failed registration (reading what the last
// run left, a server that does not listen, an Apply refused) is retried on
// the clock with a doubling wait, shown on /status meanwhile, and cleared
// by the retry that succeeds; no retry runs before its time.
func TestRunRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	refused := errors.New("refused")
	for _, tc := range []struct {
		name string
		reg  *fakeRegistrar
		// before the first discovery: what the last run left is read
		beforeDiscovery bool
	}{
		{name: "apply", reg: &fakeRegistrar{applyErrs: []error{refused, refused, refused}}},
		{name: "listen", reg: &fakeRegistrar{listenErrs: []error{refused, refused, refused}}},
		{name: "what the last run registered", beforeDiscovery: true,
			reg: &fakeRegistrar{registeredErrs: []error{refused, refused, refused}, registered: map[string]bool{"validating/guard.example.com": true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var enabled []string
			if !tc.beforeDiscovery {
				enabled = []string{"guard"}
			}
			trees, modules := state(modelOf(nil, map[string][]*loader.Hook{
				"guard": {hookOf("guard/hooks/v.sh", "guard", []loader.AdmissionBinding{validating("guard.example.com", admissionregv1.Fail)})},
			}), enabled)
			clock := testclock.New()
			reg := tc.reg
			w := New(Options{Logger: quiet(), Trees: trees, Modules: modules, Registrar: reg, Now: clock.Now, After: clock.After,
				RetryMin: time.Second, RetryMax: 3 * time.Second})
			start(t, w)
			// 1s, 2s, then the bound: 3s
			for _, wait := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second} {
				parked(t, clock, wait)
				if st := w.Status(); st == nil || st.Error != "refused" {
					t.Fatalf("status while failing: %+v", st)
				}
				clock.Advance(wait - time.Millisecond)
				if got := clock.LongestWait(); got != time.Millisecond {
					t.Fatalf("retried before its time (waiting %s)", got)
				}
				clock.Advance(time.Millisecond)
			}
			// the fourth attempt succeeds: the module's webhook (the last
			// run's, kept before discovery) is registered
			testwait.Until(t, "the registration", func() bool { st := w.Status(); return st != nil && st.Error == "" })
			if got := reg.last(); got != "guard.example.com" {
				t.Fatalf("registered %q after the retries", got)
			}
			parked(t, clock, RewriteEvery)
			if st := w.Status(); st == nil || st.Error != "" {
				t.Fatalf("status after the retry: %+v", st)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	for n, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second} {
		if got := backoff(time.Second, 30*time.Second, n); got != want {
			t.Errorf("backoff after %d: %s, want %s", n, got, want)
		}
	}
}
