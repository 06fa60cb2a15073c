package ring

import (
	"errors"
	"testing"
	"time"

	"github.com/addonops/addon-operator/commitstatus"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// st is a cluster's revision status as the forge holds it, posted at
// minute min past t0; ring -1 posts no ring (an older version).
func st(cluster string, ring int, state commitstatus.State, min int) commitstatus.Posted {
	desc := string(state) + " on " + cluster
	if ring >= 0 {
		desc = "[ring " + string(rune('0'+ring)) + "] " + desc
	}
	return commitstatus.Posted{Context: "addon-operator/" + cluster, Description: desc, Time: t0.Add(time.Duration(min) * time.Minute)}
}

func policy(t *testing.T, s Spec) Policy {
	t.Helper()
	p, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDecide(t *testing.T) {
	const H, A, D, F = commitstatus.Healthy, commitstatus.Applied, commitstatus.Degraded, commitstatus.Failed
	ring1 := Spec{Ring: 1}
	listed := Spec{Ring: 1, Previous: []string{"a", "b", "c"}}
	tests := []struct {
		name     string
		spec     Spec
		statuses []commitstatus.Posted
		readErr  error
		commitAt time.Time
		now      int // minutes past t0
		verdict  Verdict
		reason   string
		stopped  string
	}{
		{"ring 0 always applies", Spec{}, nil, errors.New("forge down"), time.Time{}, 0, Apply, "ring 0 applies at once", ""},
		{"one of two healthy", ring1, []commitstatus.Posted{st("a", 0, H, 1), st("b", 0, A, 2)}, nil, time.Time{}, 5, Wait, "waiting for ring 0 (1 of 2 healthy)", ""},
		{"both healthy", ring1, []commitstatus.Posted{st("a", 0, H, 1), st("b", 0, H, 2)}, nil, time.Time{}, 5, Apply, "ring 0: 2 of 2 healthy", ""},
		{"degraded stops", ring1, []commitstatus.Posted{st("a", 0, H, 1), st("b", 0, D, 2)}, nil, time.Time{}, 5, Stop, "stopped: b of ring 0 reported degraded", "b"},
		{"failed stops", ring1, []commitstatus.Posted{st("a", 0, F, 1), st("b", 0, H, 2)}, nil, time.Time{}, 5, Stop, "stopped: a of ring 0 reported failed", "a"},
		{"one needed", Spec{Ring: 1, Healthy: Need{1}}, []commitstatus.Posted{st("a", 0, H, 1), st("b", 0, A, 2)}, nil, time.Time{}, 5, Apply, "ring 0: 1 of 2 healthy, 1 needed", ""},
		{"soaking", Spec{Ring: 1, Soak: "30m"}, []commitstatus.Posted{st("a", 0, H, 1), st("b", 0, H, 5)}, nil, time.Time{}, 20, Wait,
			"waiting for ring 0 to soak until 2026-11-27T12:35:00Z (2 of 2 healthy)", ""},
		{"soaked", Spec{Ring: 1, Soak: "30m"}, []commitstatus.Posted{st("a", 0, H, 1), st("b", 0, H, 5)}, nil, time.Time{}, 35, Apply, "ring 0: 2 of 2 healthy", ""},
		// two of three needed: met at the second healthy report
		{"soak from the report it needed", Spec{Ring: 2, Healthy: Need{2}, Soak: "10m"},
			[]commitstatus.Posted{st("x", 1, H, 1), st("y", 1, H, 3), st("z", 1, H, 50)}, nil, time.Time{}, 13, Apply, "ring 1: 3 of 3 healthy, 2 needed", ""},
		{"other rings, modules and CI ignored", ring1, []commitstatus.Posted{
			st("a", 0, H, 1), st("peer", 1, D, 2), st("far", 2, F, 2), st("old", -1, D, 2),
			{Context: "addon-operator/a/cert-manager", Description: "[ring 0] module cert-manager degraded on a", Time: t0},
			{Context: "ci/build", Description: "failed", Time: t0},
		}, nil, time.Time{}, 5, Apply, "ring 0: 1 of 1 healthy", ""},
		{"older than the commit", ring1, []commitstatus.Posted{st("a", 0, H, 1)}, nil, t0.Add(2 * time.Minute), 5, Wait,
			"waiting for ring 0 (no cluster of ring 0 has reported this commit)", ""},
		{"nothing posted yet", ring1, nil, nil, time.Time{}, 5, Wait, "waiting for ring 0 (no cluster of ring 0 has reported this commit)", ""},
		{"listed, one silent", listed, []commitstatus.Posted{st("a", 0, H, 1), st("b", 0, H, 2), st("d", 0, H, 2)}, nil, time.Time{}, 5, Wait,
			"waiting for ring 0 (2 of 3 healthy; no status yet from c)", ""},
		// the list is the ring: a listed cluster counts without a ring tag
		{"listed, an older version", listed, []commitstatus.Posted{st("a", 0, H, 1), st("b", -1, H, 2), st("c", 0, H, 3)}, nil, time.Time{}, 5, Apply, "ring 0: 3 of 3 healthy", ""},
		{"forge rate-limits", ring1, nil, errors.New("the forge rate-limits reads (HTTP 429)"), time.Time{}, 5, Wait,
			"waiting for ring 0: the forge rate-limits reads (HTTP 429)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := policy(t, tt.spec).Decide(Input{Statuses: tt.statuses, ReadErr: tt.readErr, CommitTime: tt.commitAt, Now: t0.Add(time.Duration(tt.now) * time.Minute)})
			if d.Verdict != tt.verdict || d.Reason != tt.reason || d.StoppedBy != tt.stopped {
				t.Fatalf("Decide = %+v\nwant %s %q stopped by %q", d, tt.verdict, tt.reason, tt.stopped)
			}
		})
	}
}

// A cluster's newest status counts, whatever order the forge lists them.
func TestDecideNewestOfACluster(t *testing.T) {
	d := policy(t, Spec{Ring: 1}).Decide(Input{Now: t0, Statuses: []commitstatus.Posted{
		st("a", 0, commitstatus.Healthy, 9), st("a", 0, commitstatus.Degraded, 2),
	}})
	if d.Verdict != Apply || d.Healthy != 1 || d.Of != 1 {
		t.Fatalf("Decide = %+v", d)
	}
}
