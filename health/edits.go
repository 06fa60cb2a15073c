package health

import (
	"slices"

	"github.com/addonops/addon-operator/loader"
)

// noteEdit notes o's module for OnEdited when an update changed what o
// says (its fingerprint), not only its status. The first list, a
// creation and a deletion are not edits: a deleted object is
// auto-healing's (docs/operator.md, "Drift"). Under mu, on the watch's
// handler: it only notes, the Run loop tells.
func (t *Tracker) noteEdit(o *object, typ string, s summary) {
	// an event older than what Refresh read is no edit (observe drops it)
	if t.opts.OnEdited == nil || typ != loader.EventModified || !o.seen || o.sum.Fingerprint == s.Fingerprint || o.stale(true, s) {
		return
	}
	if t.modules[o.m.name] != o.m || slices.Contains(t.edited, o.m.name) {
		return
	}
	t.edited = append(t.edited, o.m.name)
	t.signal()
}

// tellEdited tells the listener of edits, from Run's goroutine.
func (t *Tracker) tellEdited(modules []string) {
	for _, name := range modules {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.logger.Error("edit listener panicked", "module", name, "panic", r)
				}
			}()
			t.opts.OnEdited(name)
		}()
	}
}
