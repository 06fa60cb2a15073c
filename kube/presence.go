package kube

import "sync/atomic"

// Presence answers, from watches that already run, that every object of a
// module's deployed release at revision is in the cluster (the health
// tracker: docs/operator.md, "Health"). It answers false whenever it does
// not know (a watch not synced, an object it has not seen, another
// revision); Upgrade then reads each object from the API server.
type Presence interface {
	AllPresent(module string, revision int) bool
}

// presence holds the Helm client's Presence (none: every check reads).
type presence struct{ p atomic.Pointer[Presence] }

// SetPresence makes the unchanged-release check of Upgrade trust p when it
// says every object is there: a no-change module run then costs no round
// trip per object (docs/performance.md). An object deleted within the
// watch's delay of that check is found by the next auto-healing check
// (docs/operator.md, "Auto-healing").
func (h *Helm) SetPresence(p Presence) { h.presence.p.Store(&p) }

// allPresent: the Presence, if any, knows every object of name's release
// at revision is there.
func (p *presence) allPresent(name string, revision int) bool {
	q := p.p.Load()
	return q != nil && *q != nil && (*q).AllPresent(name, revision)
}
