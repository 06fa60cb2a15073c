package ring

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/addonops/addon-operator/commitstatus"
)

// Verdict is what the gate says of a commit.
type Verdict string

const (
	// Apply: the commit may apply on this cluster.
	Apply Verdict = "apply"
	// Wait: not yet; this cluster keeps running its revision.
	Wait Verdict = "wait"
	// Stop: a cluster of the previous ring reported the commit degraded
	// or failed; the rollout stops at this ring.
	Stop Verdict = "stop"
)

// Input is what the gate decides from.
type Input struct {
	// Statuses are the commit's statuses as read from the forge
	// (commitstatus.ReadCache), ReadErr the read's error if it failed:
	// then the gate waits, with the error as its reason.
	Statuses []commitstatus.Posted
	ReadErr  error
	// CommitTime, if set, is the commit's time: statuses older than it
	// are ignored.
	CommitTime time.Time
	Now        time.Time
}

// Decision is the gate's answer, with what it counted.
type Decision struct {
	Verdict Verdict `json:"verdict"`
	// Reason is one line for the commit status and /status, such as
	// "waiting for ring 0 (1 of 2 healthy)".
	Reason string `json:"reason"`
	// Healthy of Of clusters of the previous ring reported the commit
	// healthy; Need is how many the policy needs.
	Healthy int `json:"healthy"`
	Of      int `json:"of"`
	Need    int `json:"need"`
	// StoppedBy is the cluster whose report stopped the rollout, and
	// StoppedState what it reported.
	StoppedBy    string             `json:"stoppedBy,omitempty"`
	StoppedState commitstatus.State `json:"stoppedState,omitempty"`
	// Until is when the soak ends, while waiting on it.
	Until time.Time `json:"until,omitzero"`
}

// report is one cluster of the previous ring's revision status.
type report struct {
	cluster string
	state   commitstatus.State
	at      time.Time
}

// Decide applies the policy to the commit's statuses.
func (p Policy) Decide(in Input) Decision {
	if p.Ring == 0 {
		return Decision{Verdict: Apply, Reason: "ring 0 applies at once"}
	}
	prev := p.Ring - 1
	waitFor := fmt.Sprintf("waiting for ring %d", prev)
	if in.ReadErr != nil {
		return Decision{Verdict: Wait, Reason: waitFor + ": " + in.ReadErr.Error()}
	}
	reports := p.previous(in)
	d := Decision{Of: len(reports)}
	if p.Previous != nil {
		d.Of = len(p.Previous)
	}
	var healthy []time.Time
	for _, r := range reports {
		switch r.state {
		case commitstatus.Degraded, commitstatus.Failed:
			d.Verdict, d.StoppedBy, d.StoppedState = Stop, r.cluster, r.state
			d.Reason = fmt.Sprintf("stopped: %s of ring %d reported %s", r.cluster, prev, r.state)
			return d
		case commitstatus.Healthy:
			healthy = append(healthy, r.at)
		}
	}
	d.Healthy, d.Need = len(healthy), p.Healthy.N
	if d.Need == 0 {
		d.Need = d.Of
	}
	count := fmt.Sprintf("%d of %d healthy", d.Healthy, d.Of)
	if p.Healthy != All {
		count += fmt.Sprintf(", %d needed", d.Need)
	}
	switch {
	case d.Of == 0:
		d.Verdict, d.Reason = Wait, fmt.Sprintf("%s (no cluster of ring %d has reported this commit)", waitFor, prev)
		return d
	case d.Healthy < d.Need:
		d.Verdict, d.Reason = Wait, fmt.Sprintf("%s (%s%s)", waitFor, count, p.silent(reports))
		return d
	}
	// met when the need-th healthy report came
	slices.SortFunc(healthy, func(a, b time.Time) int { return a.Compare(b) })
	if until := healthy[d.Need-1].Add(p.Soak); p.Soak > 0 && in.Now.Before(until) {
		d.Verdict, d.Until = Wait, until
		d.Reason = fmt.Sprintf("%s to soak until %s (%s)", waitFor, until.UTC().Format(time.RFC3339), count)
		return d
	}
	d.Verdict, d.Reason = Apply, fmt.Sprintf("ring %d: %s", prev, count)
	return d
}

// previous is the revision status of each cluster of the previous ring,
// by cluster name: statuses that are not ours, a module's, older than
// the commit or of another ring are left out.
func (p Policy) previous(in Input) []report {
	var out []report
	for _, s := range in.Statuses {
		own, ok := commitstatus.ParseOwn(s.Context, s.Description)
		if !ok || own.Module != "" || (!in.CommitTime.IsZero() && s.Time.Before(in.CommitTime)) {
			continue
		}
		if p.Previous != nil {
			if _, listed := slices.BinarySearch(p.Previous, own.Cluster); !listed {
				continue
			}
		} else if !own.HasRing || own.Ring != p.Ring-1 {
			continue
		}
		out = append(out, report{cluster: own.Cluster, state: own.State, at: s.Time})
	}
	// by cluster, the newest first: that one is kept
	slices.SortFunc(out, func(a, b report) int {
		if c := strings.Compare(a.cluster, b.cluster); c != 0 {
			return c
		}
		return b.at.Compare(a.at)
	})
	return slices.CompactFunc(out, func(a, b report) bool { return a.cluster == b.cluster })
}

// silent names the listed clusters that have posted nothing yet.
func (p Policy) silent(reports []report) string {
	var none []string
	for _, c := range p.Previous {
		if !slices.ContainsFunc(reports, func(r report) bool { return r.cluster == c }) {
			none = append(none, c)
		}
	}
	if len(none) == 0 {
		return ""
	}
	return "; no status yet from " + strings.Join(none, ", ")
}
