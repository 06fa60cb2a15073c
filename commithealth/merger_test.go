package commithealth

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/addonops/addon-operator/commitstatus"
	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/kube"
)

// reports is a fake Reporter: each report as one line.
type reports struct {
	mu  sync.Mutex
	got []string
}

func (r *reports) Report(rep commitstatus.Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	line := fmt.Sprintf("%s %s", rep.Commit, rep.State)
	if rep.Module != "" {
		line = fmt.Sprintf("%s %s/%s", rep.Commit, rep.Module, rep.State)
	}
	if rep.Reason != "" {
		line += ": " + rep.Reason
	}
	r.got = append(r.got, line)
}

func (r *reports) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.got
	r.got = nil
	return out
}

// tracker is a fake health tracker: the modules' health as set.
type tracker struct {
	mu   sync.Mutex
	mods map[string]health.ModuleHealth
}

func (f *tracker) Modules() map[string]health.ModuleHealth {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.mods)
}

var _ Modules = (*tracker)(nil)

// step is one thing that happens: a module's health changes (module and
// status), or the lifecycle reports a revision state (state).
type step struct {
	module string
	status health.Status
	// removed: the module is no longer tracked (purged)
	removed bool
	commit  string
	state   commitstatus.State
	// of: a module's lifecycle state (with state)
	of   string
	want []string
}

func healthOf(s step) health.ModuleHealth {
	h := health.ModuleHealth{Status: s.status}
	if s.status != health.Healthy {
		h.Objects = []health.ObjectHealth{{ObjectRef: kube.ObjectRef{Kind: "Deployment", Namespace: "ns", Name: s.module}, Status: "InProgress"}}
	}
	return h
}

func play(t *testing.T, m *Merger, f *tracker, r *reports, steps []step) {
	t.Helper()
	for i, s := range steps {
		switch {
		case s.state != "":
			m.Report(commitstatus.Report{Commit: s.commit, Module: s.of, State: s.state})
		case s.removed:
			f.mu.Lock()
			delete(f.mods, s.module)
			f.mu.Unlock()
		default:
			h := healthOf(s)
			f.mu.Lock()
			f.mods[s.module] = h
			f.mu.Unlock()
			m.Transition(health.Transition{Module: s.module, Health: h})
		}
		if got := r.take(); !slices.Equal(got, s.want) {
			t.Fatalf("step %d (%+v): reports %q, want %q", i, s, got, s.want)
		}
	}
}

func set(module string, s health.Status, want ...string) step {
	return step{module: module, status: s, want: want}
}

func rev(commit string, s commitstatus.State, want ...string) step {
	return step{commit: commit, state: s, want: want}
}

// A revision's health reaches its commit only once it is applied and
// every module's health has settled, each change once; a module's status
// follows it; a new revision starts over, one that failed gets none, and
// another commit's refusal leaves the applied one be. The lifecycle's
// own states always pass through.
func TestMerger(t *testing.T) {
	t.Parallel()
	const ap, ing, fail = commitstatus.Applied, commitstatus.Applying, commitstatus.Failed
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"settles once applied", []step{
			set("a", health.Healthy), set("b", health.Progressing),
			rev("c1", ing, "c1 applying"),
			rev("c1", ap, "c1 applied", "c1 a/healthy", "c1 b/progressing: Deployment ns/b InProgress"),
			set("b", health.Healthy, "c1 b/healthy", "c1 healthy"),
		}},
		{"each change once", []step{
			set("a", health.Healthy),
			rev("c1", ap, "c1 applied", "c1 a/healthy", "c1 healthy"),
			set("a", health.Healthy),
			rev("c1", ap, "c1 applied"),
			set("a", health.Degraded, "c1 a/degraded: Deployment ns/a InProgress", "c1 degraded: module a: Deployment ns/a InProgress"),
			set("a", health.Healthy, "c1 a/healthy", "c1 healthy"),
		}},
		{"unknown is not settled and not posted", []step{
			set("a", health.Unknown),
			rev("c1", ap, "c1 applied"),
			set("a", health.Healthy, "c1 a/healthy", "c1 healthy"),
		}},
		{"the worst module names the reason", []step{
			set("a", health.Degraded), set("b", health.Degraded),
			rev("c1", ap, "c1 applied", "c1 a/degraded: Deployment ns/a InProgress", "c1 b/degraded: Deployment ns/b InProgress",
				"c1 degraded: module a: Deployment ns/a InProgress"),
		}},
		{"a new revision starts over", []step{
			set("a", health.Healthy),
			rev("c1", ap, "c1 applied", "c1 a/healthy", "c1 healthy"),
			rev("c2", ing, "c2 applying"),
			set("a", health.Progressing),
			set("a", health.Healthy),
			rev("c2", ap, "c2 applied", "c2 a/healthy", "c2 healthy"),
		}},
		{"another commit refused: the applied one goes on", []step{
			set("b", health.Healthy),
			rev("c2", ap, "c2 applied", "c2 b/healthy", "c2 healthy"),
			rev("c9", fail, "c9 failed"),
			set("b", health.Progressing, "c2 b/progressing: Deployment ns/b InProgress"),
			set("b", health.Healthy, "c2 b/healthy"),
		}},
		{"a held commit: the applied one goes on", []step{
			set("b", health.Healthy),
			rev("c2", ap, "c2 applied", "c2 b/healthy", "c2 healthy"),
			rev("c9", commitstatus.Held, "c9 held"),
			set("b", health.Progressing, "c2 b/progressing: Deployment ns/b InProgress"),
			set("b", health.Healthy, "c2 b/healthy"),
		}},
		{"a failed revision gets no health", []step{
			rev("c3", ing, "c3 applying"),
			rev("c3", fail, "c3 failed"),
			set("b", health.Degraded),
		}},
		{"a module's lifecycle state is not the revision's", []step{
			set("a", health.Healthy),
			{commit: "c3", of: "a", state: ap, want: []string{"c3 a/applied"}},
			set("a", health.Degraded),
		}},
		{"a removed module no longer counts", []step{
			set("a", health.Healthy), set("b", health.Progressing),
			rev("c1", ap, "c1 applied", "c1 a/healthy", "c1 b/progressing: Deployment ns/b InProgress"),
			{module: "b", removed: true},
			set("a", health.Healthy, "c1 healthy"),
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, r := &tracker{mods: map[string]health.ModuleHealth{}}, &reports{}
			m := New(r)
			m.Follow(f)
			play(t, m, f, r, tt.steps)
		})
	}
}

// Before Follow, the lifecycle's states pass through and no health is
// posted.
func TestMergerBeforeFollow(t *testing.T) {
	t.Parallel()
	r := &reports{}
	m := New(r)
	m.Report(commitstatus.Report{Commit: "c1", State: commitstatus.Applied})
	m.Transition(health.Transition{Module: "a", Health: health.ModuleHealth{Status: health.Healthy}})
	if got, want := r.take(), []string{"c1 applied"}; !slices.Equal(got, want) {
		t.Fatalf("reports %q, want %q", got, want)
	}
}

func TestHealthReason(t *testing.T) {
	t.Parallel()
	obj := func(ns string) []health.ObjectHealth {
		return []health.ObjectHealth{{ObjectRef: kube.ObjectRef{Kind: "Job", Namespace: ns, Name: "x"}, Status: "Failed", Message: "secret output"}}
	}
	for _, tt := range []struct {
		name, module string
		h            health.ModuleHealth
		want         string
	}{
		{"healthy", "", health.ModuleHealth{Status: health.Healthy, Objects: obj("ns")}, ""},
		{"no objects", "", health.ModuleHealth{Status: health.Degraded}, ""},
		{"namespaced", "", health.ModuleHealth{Status: health.Degraded, Objects: obj("ns")}, "Job ns/x Failed"},
		{"cluster-scoped", "", health.ModuleHealth{Status: health.Degraded, Objects: obj("")}, "Job x Failed"},
		{"with its module", "m", health.ModuleHealth{Status: health.Progressing, Objects: obj("ns")}, "module m: Job ns/x Failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := healthReason(tt.module, tt.h); got != tt.want {
				t.Fatalf("healthReason = %q, want %q", got, tt.want)
			}
		})
	}
}
