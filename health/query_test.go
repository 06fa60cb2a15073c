package health

import (
	"context"
	"sync"
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

// fakeReader is the API server's copy of objects, ahead of the fake
// watches when a test says so.
type fakeReader struct {
	mu   sync.Mutex
	objs map[kube.ObjectRef]map[string]any
}

func (f *fakeReader) Get(_ context.Context, r kube.ObjectRef) (map[string]any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.objs[r], nil
}

// Refresh takes the API server's copy before the watch tells it: an
// upgraded Deployment the watch still has as Current at the generation
// before is Progressing at once, and the watch's late event of that older
// generation does not bring back Healthy; the newer one counts.
func TestTrackerRefresh(t *testing.T) {
	reader := &fakeReader{objs: map[kube.ObjectRef]map[string]any{}}
	h := newHarness(t, Options{ProgressTimeout: time.Minute, Objects: reader})
	old := deployment("ns", "web", 1, 2)
	h.w.set(old)
	h.r.set("web", kube.ReleaseObjects{Revision: 1, Objects: []kube.ObjectRef{ref(old)}})
	h.t.Deployed(t.Context(), "web", 1, true)
	h.settle(t, "web", Healthy)

	// the upgrade: the API server has generation 2, the watch not yet
	reader.objs[ref(old)] = deployment("ns", "web", 2, 0)
	if err := h.t.Refresh(t.Context(), "web"); err != nil {
		t.Fatal(err)
	}
	if mh, _ := h.t.Module("web"); mh.Status != Progressing {
		t.Fatalf("after Refresh: %s, want Progressing", mh.Status)
	}
	h.w.set(deployment("ns", "web", 1, 1)) // a late event of generation 1
	time.Sleep(100 * time.Millisecond)
	if mh, _ := h.t.Module("web"); mh.Status != Progressing {
		t.Fatalf("after a late event of the older generation: %s, want Progressing", mh.Status)
	}
	h.w.set(deployment("ns", "web", 2, 2))
	h.settle(t, "web", Healthy)
}
