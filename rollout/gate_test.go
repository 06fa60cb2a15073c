package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/addonops/addon-operator/changewindow"
	"github.com/addonops/addon-operator/commitstatus"
	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/ring"
)

// t0 is a Wednesday.
var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

const (
	running   = "1111111111111111111111111111111111111111"
	candidate = "2222222222222222222222222222222222222222"
	older     = "3333333333333333333333333333333333333333"
)

// fakeLister answers statuses and counts its reads.
type fakeLister struct {
	mu       sync.Mutex
	statuses []commitstatus.Posted
	err      error
	reads    int
}

func (f *fakeLister) Statuses(_ context.Context, commit string) ([]commitstatus.Posted, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return f.statuses, f.err
}

// st is a cluster's revision status, posted min minutes past t0.
func st(cluster string, ringN int, state commitstatus.State, min int) commitstatus.Posted {
	return commitstatus.Posted{Context: "addon-operator/" + cluster,
		Description: "[ring " + string(rune('0'+ringN)) + "] " + string(state) + " on " + cluster,
		Time:        t0.Add(time.Duration(min) * time.Minute)}
}

func ringPolicy(t *testing.T, s ring.Spec, holdRollbacks bool) *Policy {
	t.Helper()
	p, err := ring.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return &Policy{Ring: &p, HoldRollbacks: holdRollbacks}
}

func windowPolicy(t *testing.T, specs ...changewindow.Spec) *Policy {
	t.Helper()
	s, err := changewindow.Parse(specs, t0)
	if err != nil {
		t.Fatal(err)
	}
	return &Policy{Windows: s, Specs: specs}
}

// deny is a deny window open at t0 (noon to 14:00 every day).
var deny = changewindow.Spec{Name: "freeze", Kind: changewindow.Deny, Schedule: "0 12 * * *", Duration: "2h"}

// allowNight is an allow window closed at t0 (02:00-04:00).
var allowNight = changewindow.Spec{Name: "night", Kind: changewindow.Allow, Schedule: "0 2 * * *", Duration: "2h"}

func TestDecide(t *testing.T) {
	const H, A, D, F = commitstatus.Healthy, commitstatus.Applied, commitstatus.Degraded, commitstatus.Failed
	ring1 := ring.Spec{Ring: 1}
	both := func(t *testing.T) *Policy {
		p := ringPolicy(t, ring1, false)
		p.Windows, p.Specs = windowPolicy(t, deny).Windows, []changewindow.Spec{deny}
		return p
	}
	tests := []struct {
		name     string
		policy   func(t *testing.T) *Policy // the running revision's
		statuses []commitstatus.Posted
		readErr  error
		now      time.Duration // past t0
		rev      gitsync.Revision
		history  []gitsync.Revision
		broken   commitstatus.State
		applyNow ApplyNow
		held     []string // holders
		reason   string   // the posted reason, or the note when applied
	}{
		{name: "no policy applies", policy: func(*testing.T) *Policy { return nil }},
		{name: "ring 0 applies", policy: func(t *testing.T) *Policy { return ringPolicy(t, ring.Spec{}, false) }},
		{name: "ring waits", policy: func(t *testing.T) *Policy { return ringPolicy(t, ring1, false) },
			statuses: []commitstatus.Posted{st("a", 0, H, 1), st("b", 0, A, 2)},
			held:     []string{HeldByRing}, reason: "waiting for ring 0 (1 of 2 healthy)"},
		{name: "ring applies", policy: func(t *testing.T) *Policy { return ringPolicy(t, ring1, false) },
			statuses: []commitstatus.Posted{st("a", 0, H, 1), st("b", 0, H, 2)}},
		{name: "ring stops", policy: func(t *testing.T) *Policy { return ringPolicy(t, ring1, false) },
			statuses: []commitstatus.Posted{st("a", 0, H, 1), st("b", 0, D, 2)},
			held:     []string{HeldByRing}, reason: "stopped: b of ring 0 reported degraded"},
		{name: "soak holds", policy: func(t *testing.T) *Policy { return ringPolicy(t, ring.Spec{Ring: 1, Soak: "30m"}, false) },
			statuses: []commitstatus.Posted{st("a", 0, H, 1)}, now: 10 * time.Minute,
			held: []string{HeldByRing}, reason: "waiting for ring 0 to soak until 2026-11-25T12:31:00Z (1 of 1 healthy)"},
		{name: "soak over", policy: func(t *testing.T) *Policy { return ringPolicy(t, ring.Spec{Ring: 1, Soak: "30m"}, false) },
			statuses: []commitstatus.Posted{st("a", 0, H, 1)}, now: 31 * time.Minute},
		{name: "forge error holds", policy: func(t *testing.T) *Policy { return ringPolicy(t, ring1, false) },
			readErr: errors.New("forge down"), held: []string{HeldByRing}, reason: "waiting for ring 0: forge down"},
		{name: "window holds", policy: func(t *testing.T) *Policy { return windowPolicy(t, deny) },
			held: []string{HeldByWindow}, reason: `held by window "freeze" (deny) until 2026-11-25T14:00:00Z`},
		{name: "window open", policy: func(t *testing.T) *Policy { return windowPolicy(t, deny) }, now: 2 * time.Hour},
		{name: "outside allow window holds", policy: func(t *testing.T) *Policy { return windowPolicy(t, allowNight) },
			held: []string{HeldByWindow}, reason: `held by window "night" (allow) until 2026-11-26T02:00:00Z`},
		{name: "ring and window both hold", policy: both, statuses: []commitstatus.Posted{st("a", 0, A, 1)},
			held: []string{HeldByRing, HeldByWindow}, reason: "waiting for ring 0 (0 of 1 healthy)"},
		{name: "apply-now lets it through", policy: both, statuses: []commitstatus.Posted{st("a", 0, A, 1)},
			applyNow: ApplyNow{Commit: candidate[:7], By: "alice"},
			reason:   `waiting for ring 0 (0 of 1 healthy) (applied by apply-now); held by window "freeze" (deny) until 2026-11-25T14:00:00Z (applied by apply-now)`},
		{name: "apply-now of another commit", policy: both, statuses: []commitstatus.Posted{st("a", 0, A, 1)},
			applyNow: ApplyNow{Commit: older[:7]}, held: []string{HeldByRing, HeldByWindow}, reason: "waiting for ring 0 (0 of 1 healthy)"},
		{name: "apply-now too short", policy: both, statuses: []commitstatus.Posted{st("a", 0, A, 1)},
			applyNow: ApplyNow{Commit: candidate[:6]}, held: []string{HeldByRing, HeldByWindow}, reason: "waiting for ring 0 (0 of 1 healthy)"},
		{name: "failed cluster not held", policy: both, statuses: []commitstatus.Posted{st("a", 0, D, 1)}, broken: F,
			reason: "applied despite the ring: the running revision is failed; applied despite the window: the running revision is failed"},
		{name: "degraded cluster not held", policy: both, statuses: []commitstatus.Posted{st("a", 0, A, 1)}, broken: D,
			reason: "applied despite the ring: the running revision is degraded; applied despite the window: the running revision is degraded"},
		{name: "applied cluster held", policy: both, statuses: []commitstatus.Posted{st("a", 0, A, 1)}, broken: A,
			held: []string{HeldByRing, HeldByWindow}, reason: "waiting for ring 0 (0 of 1 healthy)"},
		{name: "pinned rollback not held by ring", policy: func(t *testing.T) *Policy { return ringPolicy(t, ring1, false) },
			rev:    gitsync.Revision{Commit: candidate, Ref: candidate},
			reason: "applied despite the ring: a rollback (the ref pins commit 222222222222); rollout.holdRollbacks is off"},
		{name: "content rollback not held by ring", policy: func(t *testing.T) *Policy { return ringPolicy(t, ring1, false) },
			rev:     gitsync.Revision{Commit: candidate, Ref: "main", RemoteRef: "refs/heads/main", Tree: "t-old"},
			history: []gitsync.Revision{{Commit: running, Tree: "t-now"}, {Commit: older, Tree: "t-old"}},
			reason:  "applied despite the ring: a rollback (the same content as 333333333333, published before); rollout.holdRollbacks is off"},
		{name: "new content is no rollback", policy: func(t *testing.T) *Policy { return ringPolicy(t, ring1, false) },
			rev:     gitsync.Revision{Commit: candidate, Ref: "main", RemoteRef: "refs/heads/main", Tree: "t-new"},
			history: []gitsync.Revision{{Commit: running, Tree: "t-now"}, {Commit: older, Tree: "t-old"}},
			held:    []string{HeldByRing}, reason: "waiting for ring 0 (no cluster of ring 0 has reported this commit)"},
		{name: "rollback held with holdRollbacks", policy: func(t *testing.T) *Policy { return ringPolicy(t, ring1, true) },
			rev:  gitsync.Revision{Commit: candidate, Ref: candidate},
			held: []string{HeldByRing}, reason: "waiting for ring 0 (no cluster of ring 0 has reported this commit)"},
		{name: "rollback held by window", policy: func(t *testing.T) *Policy { return windowPolicy(t, deny) },
			rev:  gitsync.Revision{Commit: candidate, Ref: candidate},
			held: []string{HeldByWindow}, reason: `held by window "freeze" (deny) until 2026-11-25T14:00:00Z`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &fakeLister{statuses: tt.statuses, err: tt.readErr}
			g := New(Options{Lister: l, Now: func() time.Time { return t0.Add(tt.now) },
				Running:  func() Running { return Running{Commit: running, Broken: tt.broken} },
				History:  func() []gitsync.Revision { return tt.history },
				ApplyNow: func() ApplyNow { return tt.applyNow }})
			g.Learn(running, tt.policy(t))
			rev := tt.rev
			if rev.Commit == "" {
				rev = gitsync.Revision{Commit: candidate, Ref: "main", RemoteRef: "refs/heads/main"}
			}
			d := g.Decide(context.Background(), rev)
			var by []string
			for _, h := range d.Holds {
				by = append(by, h.By)
			}
			if strings.Join(by, ",") != strings.Join(tt.held, ",") {
				t.Errorf("held by %v, want %v (%+v)", by, tt.held, d)
			}
			got := d.Reason
			if !d.Held() {
				got = d.Note
			}
			if got != tt.reason {
				t.Errorf("reason\n got %q\nwant %q", got, tt.reason)
			}
			if tt.applyNow.Commit != "" && !d.Held() && (d.ApplyNow == nil || d.ApplyNow.By != "alice") {
				t.Errorf("ApplyNow = %+v, want alice's", d.ApplyNow)
			}
			if last := g.Last(); last == nil || last.Commit != candidate {
				t.Errorf("Last() = %+v", last)
			}
		})
	}
}

// The policy in force is the running revision's: a candidate that moves
// itself to ring 0 is still held by the running revision's ring 1.
func TestPolicyInForceIsTheRunningRevisions(t *testing.T) {
	g := New(Options{Lister: &fakeLister{}, Now: func() time.Time { return t0 },
		Running: func() Running { return Running{Commit: running} }})
	g.Learn(running, ringPolicy(t, ring.Spec{Ring: 1}, false))
	g.Learn(candidate, ringPolicy(t, ring.Spec{Ring: 0}, false))
	if d := g.Decide(context.Background(), gitsync.Revision{Commit: candidate, Ref: "main", RemoteRef: "refs/heads/main"}); !d.Held() {
		t.Fatalf("the candidate's own ring 0 lifted the running revision's ring 1: %+v", d)
	}
	// once applied, its policy is in force
	g2 := New(Options{Lister: &fakeLister{}, Now: func() time.Time { return t0 },
		Running: func() Running { return Running{Commit: candidate} }})
	g2.Learn(candidate, ringPolicy(t, ring.Spec{Ring: 0}, false))
	if d := g2.Decide(context.Background(), gitsync.Revision{Commit: older, Ref: "main", RemoteRef: "refs/heads/main"}); d.Held() {
		t.Fatalf("held under ring 0: %+v", d)
	}
}

// No forge: a ring after 0 holds with that reason (Parse refuses it
// before; the gate never applies by default).
func TestNoListerHolds(t *testing.T) {
	g := New(Options{Now: func() time.Time { return t0 }, Running: func() Running { return Running{Commit: running} }})
	g.Learn(running, ringPolicy(t, ring.Spec{Ring: 2}, false))
	d := g.Decide(context.Background(), gitsync.Revision{Commit: candidate, Ref: "main", RemoteRef: "refs/heads/main"})
	if !d.Held() || !strings.Contains(d.Reason, "no forge to read the statuses of ring 1 from") {
		t.Fatalf("got %+v", d)
	}
}

// Through a ReadCache, the gates of one poll read the forge once.
func TestOneReadPerPoll(t *testing.T) {
	l := &fakeLister{statuses: []commitstatus.Posted{st("a", 0, commitstatus.Applied, 1)}}
	now := t0
	cache := commitstatus.NewReadCache(l, commitstatus.ReadCacheOptions{TTL: time.Minute, Now: func() time.Time { return now }})
	g := New(Options{Lister: cache, Now: func() time.Time { return now }, Running: func() Running { return Running{Commit: running} }})
	g.Learn(running, ringPolicy(t, ring.Spec{Ring: 1}, false))
	rev := gitsync.Revision{Commit: candidate, Ref: "main", RemoteRef: "refs/heads/main"}
	for range 5 {
		g.Decide(context.Background(), rev)
	}
	if l.reads != 1 {
		t.Fatalf("%d reads within one TTL, want 1", l.reads)
	}
	now = now.Add(time.Minute)
	g.Decide(context.Background(), rev)
	if l.reads != 2 {
		t.Fatalf("%d reads after the TTL, want 2", l.reads)
	}
}

func TestApplyNowMatches(t *testing.T) {
	for _, tt := range []struct {
		commit string
		want   bool
	}{{candidate, true}, {candidate[:7], true}, {strings.ToUpper(candidate[:8]), true}, {candidate[:6], false}, {older[:7], false}, {"", false}, {"main", false}} {
		if got := (ApplyNow{Commit: tt.commit}).Matches(candidate); got != tt.want {
			t.Errorf("ApplyNow{%q}.Matches = %v, want %v", tt.commit, got, tt.want)
		}
	}
}

// /status shows a Decision as JSON: its names are the documented ones
// (docs/operator.md, "Fleets").
func TestDecisionJSON(t *testing.T) {
	g := New(Options{Lister: &fakeLister{statuses: []commitstatus.Posted{st("a", 0, commitstatus.Degraded, 1)}}, Now: func() time.Time { return t0 },
		Running:  func() Running { return Running{Commit: running} },
		ApplyNow: func() ApplyNow { return ApplyNow{Commit: candidate, By: "alice", At: t0, Reason: "INC-1"} }})
	p := ringPolicy(t, ring.Spec{Ring: 1}, false)
	p.Windows, p.Specs = windowPolicy(t, deny).Windows, []changewindow.Spec{deny}
	g.Learn(running, p)
	d := g.Decide(context.Background(), gitsync.Revision{Commit: candidate, Ref: candidate})
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"commit":"` + candidate + `"`, `"note":"stopped: a of ring 0 reported degraded (applied by apply-now); held by window`,
		`"ring":{"verdict":"stop","reason":"stopped: a of ring 0 reported degraded","healthy":0,"of":1,"need":0,"stoppedBy":"a","stoppedState":"degraded"}`,
		`"window":{"open":false,"heldBy":"freeze","kind":"deny","until":"2026-11-25T14:00:00Z","reason":`,
		`"rollback":"the ref pins commit 222222222222"`, `"applyNow":{"commit":"` + candidate + `","by":"alice","at":"2026-11-25T12:00:00Z","reason":"INC-1"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s\nlacks %s", b, want)
		}
	}
}

// Many candidates checked while one revision runs: its policy is kept.
func TestRunningPolicyKept(t *testing.T) {
	g := New(Options{Lister: &fakeLister{}, Now: func() time.Time { return t0 }, Running: func() Running { return Running{Commit: running} }})
	g.Learn(running, ringPolicy(t, ring.Spec{Ring: 1}, false))
	for i := range 3 * maxPolicies {
		g.Learn(fmt.Sprintf("%040x", i+10), &Policy{})
	}
	if g.Policy(running) == nil {
		t.Fatal("the running revision's policy was forgotten")
	}
	if n := len(g.policies); n > maxPolicies {
		t.Fatalf("%d policies kept, at most %d", n, maxPolicies)
	}
}
