package health

import "github.com/addonops/addon-operator/kube"

var _ kube.Presence = (*Tracker)(nil)

// AllPresent says that the tracker follows every object of the module's
// release at revision and its watches have each of them: Helm's check for
// missing resources then needs no request per object (kube.Presence). It
// is false whenever that is not known: the module untracked or at another
// revision, its release unreadable, an object of a kind the API does not
// serve, a watch not synced, an object not seen.
func (t *Tracker) AllPresent(module string, revision int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.modules[module]
	if m == nil || m.err != "" || m.revision != revision || revision == 0 {
		return false
	}
	for _, o := range m.objects {
		if o.unresolved != "" || o.w == nil || !o.w.synced || o.w.stopped || !o.seen {
			return false
		}
	}
	return true
}
