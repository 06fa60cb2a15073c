package health

import (
	"strings"
	"testing"
	"time"
)

// The rules of docs/operator.md, "Health", one object at a time.
func TestJudge(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const timeout = time.Minute
	synced := &watch{synced: true}
	current := func(gen int64) summary { return summary{Status: "Current", Generation: gen} }
	inProgress := func(gen int64) summary {
		return summary{Status: "InProgress", Message: "Available: 0/2", Generation: gen}
	}
	cases := []struct {
		name string
		obj  object
		// history: summaries seen before, at t0 (the last one is now's)
		seen    []summary
		at      time.Duration // after t0
		want    Status
		message string
	}{
		{name: "current", seen: []summary{current(1)}, want: Healthy},
		{name: "rolling out after our deploy", seen: []summary{inProgress(1)}, at: 30 * time.Second, want: Progressing},
		{name: "not current past the timeout", seen: []summary{inProgress(1)}, at: timeout, want: Degraded, message: "not Current 1m0s after its rollout"},
		{name: "kstatus Failed", seen: []summary{{Status: "Failed", Message: "ProgressDeadlineExceeded", Generation: 1}}, want: Degraded, message: "ProgressDeadlineExceeded"},
		{name: "broke at the same generation", seen: []summary{current(3), inProgress(3)}, at: time.Second, want: Degraded, message: "was Current at generation 3"},
		{name: "someone else's rollout", seen: []summary{current(3), inProgress(4)}, at: time.Second, want: Progressing},
		{name: "terminating", seen: []summary{{Status: "Terminating", Generation: 1}}, want: Progressing},
		{name: "kstatus cannot tell", seen: []summary{{Status: "Unknown", Message: "bad status"}}, want: Unknown},
		{name: "not found within the timeout", obj: object{}, at: time.Second, want: Progressing},
		{name: "not found past it", obj: object{}, at: 2 * timeout, want: Degraded, message: "not found"},
		{name: "watch not listed", obj: object{w: &watch{}}, seen: []summary{current(1)}, want: Unknown, message: "not listed yet"},
		{name: "watch failed", obj: object{w: &watch{err: "forbidden"}}, want: Unknown, message: "watch: forbidden"},
		{name: "kind not served", obj: object{unresolved: "no matches for kind"}, want: Unknown, message: "kind not served"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.obj
			if o.w == nil && o.unresolved == "" {
				o.w = synced
			}
			for _, s := range tc.seen {
				o.observe(true, s, t0)
			}
			v := o.judge(t0, timeout, t0.Add(tc.at))
			if v.status != tc.want {
				t.Fatalf("status %s (%+v), want %s", v.status, v.health, tc.want)
			}
			if !strings.Contains(v.health.Message, tc.message) {
				t.Fatalf("message %q, want it to contain %q", v.health.Message, tc.message)
			}
			if tc.want == Progressing && v.deadline.IsZero() {
				t.Fatal("Progressing without a deadline")
			}
		})
	}
}

// A module is its worst object: Degraded, then Progressing, then Unknown;
// the message names the first object of that status.
func TestEvaluateWorstOf(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	synced := &watch{synced: true}
	obj := func(name string, s summary) *object {
		o := &object{w: synced}
		o.ref.Kind, o.ref.Name = "Deployment", name
		o.observe(true, s, t0)
		return o
	}
	cur := summary{Status: "Current"}
	prog := summary{Status: "InProgress", Message: "rolling"}
	failed := summary{Status: "Failed", Message: "crash"}
	unknown := &object{w: &watch{}}
	unknown.ref.Kind, unknown.ref.Name = "Deployment", "a-unknown"
	cases := []struct {
		name    string
		objects []*object
		want    Status
		message string
	}{
		{"no objects", nil, Healthy, ""},
		{"all current", []*object{obj("a", cur), obj("b", cur)}, Healthy, ""},
		{"one progressing", []*object{obj("a", cur), obj("b", prog)}, Progressing, "Deployment/b: rolling"},
		{"progressing beats unknown", []*object{unknown, obj("b", prog)}, Progressing, "Deployment/b: rolling (and 1 more not Current)"},
		{"degraded beats all", []*object{unknown, obj("b", prog), obj("c", failed)}, Degraded, "Deployment/c: crash (and 2 more not Current)"},
		{"unknown", []*object{unknown, obj("b", cur)}, Unknown, "Deployment/a-unknown: not listed yet"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := &module{started: t0, timeout: time.Minute, objects: tc.objects}
			h, _ := m.evaluate(t0)
			if h.Status != tc.want || h.Message != tc.message {
				t.Fatalf("got %s %q, want %s %q", h.Status, h.Message, tc.want, tc.message)
			}
			if h.Total != len(tc.objects) {
				t.Fatalf("total %d, want %d", h.Total, len(tc.objects))
			}
		})
	}
}
