package health

import (
	"fmt"
	"sort"
	"time"

	"github.com/addonops/addon-operator/kube"
)

// object is what the tracker knows of one object of a module's release.
type object struct {
	ref  kube.ObjectRef
	m    *module
	w    *watch // nil: its kind is not served (unresolved says why)
	seen bool   // the watch has it
	sum  summary
	// wasCurrent and currentGen: it was Current at that generation; the
	// same generation going back to not Current is a breakage, not a
	// rollout
	wasCurrent bool
	currentGen int64
	// rolloutSince is when a new generation was first seen (someone's
	// rollout: ours, a hand edit, an autoscaler)
	rolloutSince time.Time
	unresolved   string
	// fresh and freshUID: the generation Refresh read from the API server,
	// of that object; until the watch catches up, its events of an older
	// generation of the same object are ones it had not told yet
	fresh    int64
	freshUID string
	// events counts what the watch told of it (Refresh's reads yield to
	// anything newer)
	events uint64
}

// stale: s, from the watch, is older than what Refresh read.
func (o *object) stale(seen bool, s summary) bool {
	return seen && o.fresh > 0 && s.UID == o.freshUID && s.Generation < o.fresh
}

// observe takes what the watch has of the object now.
func (o *object) observe(seen bool, s summary, now time.Time) {
	if o.stale(seen, s) {
		return
	}
	o.fresh, o.freshUID = 0, ""
	if seen && o.seen && s.Generation != o.sum.Generation {
		o.rolloutSince = now
	}
	o.seen, o.sum = seen, s
	if seen && s.Status == objectCurrent {
		o.wasCurrent, o.currentGen = true, s.Generation
	}
}

// verdict is one object's part in its module's status.
type verdict struct {
	status   Status
	health   ObjectHealth // when not Current
	deadline time.Time    // Progressing until then
}

// judge applies the rules of docs/operator.md, "Health": Current is
// Healthy; kstatus Failed is Degraded; an object that was Current and is
// not at the same generation broke without a rollout and is Degraded at
// once; otherwise an object not Current is Progressing until the progress
// timeout after the later of the module's deploy (started) and the
// object's last new generation, then Degraded.
func (o *object) judge(started time.Time, timeout time.Duration, now time.Time) verdict {
	oh := ObjectHealth{ObjectRef: o.ref, Status: o.sum.Status, Message: o.sum.Message}
	switch {
	case o.unresolved != "":
		oh.Status, oh.Message = "Unknown", "kind not served: "+o.unresolved
		return verdict{status: Unknown, health: oh}
	case o.w == nil || !o.w.synced:
		oh.Status, oh.Message = "Unknown", "not listed yet"
		if o.w != nil && o.w.err != "" {
			oh.Message = "watch: " + o.w.err
		}
		return verdict{status: Unknown, health: oh}
	case !o.seen:
		oh.Status, oh.Message = objectNotFound, "not found"
	case o.sum.Status == objectCurrent:
		return verdict{status: Healthy}
	case o.sum.Status == "Failed":
		return verdict{status: Degraded, health: oh}
	case o.sum.Status == "Unknown":
		return verdict{status: Unknown, health: oh}
	case o.wasCurrent && o.sum.Generation == o.currentGen:
		oh.Message = fmt.Sprintf("was Current at generation %d and broke without a rollout: %s", o.currentGen, o.sum.Message)
		return verdict{status: Degraded, health: oh}
	}
	start := started
	if o.rolloutSince.After(start) {
		start = o.rolloutSince
	}
	deadline := start.Add(timeout)
	if now.Before(deadline) {
		return verdict{status: Progressing, health: oh, deadline: deadline}
	}
	if o.seen {
		oh.Message = fmt.Sprintf("not Current %s after its rollout: %s", timeout, oh.Message)
	}
	return verdict{status: Degraded, health: oh}
}

// evaluate is a module's health now, and when it must be evaluated again
// (zero: only on an event).
func (m *module) evaluate(now time.Time) (ModuleHealth, time.Time) {
	h := ModuleHealth{Status: Healthy, Total: len(m.objects), Revision: m.revision}
	var next time.Time
	if m.err != "" {
		h.Status, h.Message = Unknown, m.err
	}
	for _, o := range m.objects {
		v := o.judge(m.started, m.timeout, now)
		if v.status == Healthy {
			continue
		}
		v.health.Health = v.status
		h.Objects = append(h.Objects, v.health)
		if rank(v.status) > rank(h.Status) {
			h.Status = v.status
		}
		if !v.deadline.IsZero() && (next.IsZero() || v.deadline.Before(next)) {
			next = v.deadline
		}
	}
	sort.Slice(h.Objects, func(i, j int) bool { return h.Objects[i].String() < h.Objects[j].String() })
	if len(h.Objects) > 0 && h.Message == "" {
		// the first object of the worst status says why
		first := h.Objects[0]
		for _, oh := range h.Objects {
			if oh.Health == h.Status {
				first = oh
				break
			}
		}
		h.Message = first.String() + ": " + first.Message
		if n := len(h.Objects) - 1; n > 0 {
			h.Message += fmt.Sprintf(" (and %d more not Current)", n)
		}
	}
	return h, next
}
