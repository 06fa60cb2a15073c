package health

import (
	"github.com/addonops/addon-operator/loader"
)

// edited says whether an event of type typ with summary s is an edit of
// o: an update that changed what o says (its fingerprint), not only its
// status. The first list, a creation and a deletion are not edits: a
// deleted object is auto-healing's (docs/operator.md, "Drift"). An event
// older than what Refresh read is no edit (observe drops it). Under the
// Tracker's mu, before o observes s.
func (o *object) edited(typ string, s summary) bool {
	return typ == loader.EventModified && o.seen && o.sum.Fingerprint != s.Fingerprint && !o.stale(true, s)
}
