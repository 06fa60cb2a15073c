package health

import (
	"testing"
	"time"

	"github.com/addonops/addon-operator/kube"
)

// Watch's channel is closed at the module's next status change, not at an
// update that leaves the status as it was, and when the module stops being
// tracked; an untracked module is not watched.
func TestTrackerWatch(t *testing.T) {
	h := newHarness(t, Options{ProgressTimeout: time.Minute})
	if _, ok := h.t.Watch("web"); ok {
		t.Fatal("an untracked module is watched")
	}
	dep := deployment("ns", "web", 1, 0)
	h.w.set(dep)
	h.r.set("web", kube.ReleaseObjects{Revision: 1, Objects: []kube.ObjectRef{ref(dep)}})
	h.t.Deployed(t.Context(), "web", 1, true)
	h.settle(t, "web", Progressing)
	w, ok := h.t.Watch("web")
	if !ok || w.Health.Status != Progressing || w.Timeout != time.Minute {
		t.Fatalf("Watch = %+v, %v; want Progressing with the 1m timeout", w, ok)
	}
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		case <-time.After(100 * time.Millisecond):
			return false
		}
	}
	h.w.set(deployment("ns", "web", 1, 0)) // the same status
	if closed(w.Changed) {
		t.Fatal("closed without a change of status")
	}
	h.w.set(deployment("ns", "web", 1, 2))
	if !closed(w.Changed) {
		t.Fatal("not closed when the module turned Healthy")
	}
	w, _ = h.t.Watch("web")
	if w.Health.Status != Healthy {
		t.Fatalf("status %s after the change, want Healthy", w.Health.Status)
	}
	h.t.Removed("web")
	if !closed(w.Changed) {
		t.Fatal("not closed when the module was removed")
	}
}
