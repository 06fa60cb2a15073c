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
	t.Parallel()
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
	t.Parallel()
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
	// a late event of generation 1; the fake watch calls the tracker's
	// handler before set returns
	h.w.set(deployment("ns", "web", 1, 1))
	if mh, _ := h.t.Module("web"); mh.Status != Progressing {
		t.Fatalf("after a late event of the older generation: %s, want Progressing", mh.Status)
	}
	h.w.set(deployment("ns", "web", 2, 2))
	h.settle(t, "web", Healthy)
}

// blockingReader answers Get only once release is closed, with obj.
type blockingReader struct {
	started chan struct{}
	release chan struct{}
	obj     map[string]any
}

func (b *blockingReader) Get(context.Context, kube.ObjectRef) (map[string]any, error) {
	close(b.started)
	<-b.release
	return b.obj, nil
}

// withUID gives obj a metadata.uid.
func withUID(obj map[string]any, uid string) map[string]any {
	obj["metadata"].(map[string]any)["uid"] = uid
	return obj
}

// A read that the watch overtook while it was in flight is dropped: the
// watch's newer Current stands (it must not turn Degraded, "broke without
// a rollout", on the read's older InProgress).
func TestTrackerRefreshYieldsToNewerEvents(t *testing.T) {
	t.Parallel()
	reader := &blockingReader{started: make(chan struct{}), release: make(chan struct{})}
	h := newHarness(t, Options{ProgressTimeout: time.Minute, Objects: reader})
	dep := deployment("ns", "web", 2, 0)
	h.w.set(dep)
	h.r.set("web", kube.ReleaseObjects{Revision: 1, Objects: []kube.ObjectRef{ref(dep)}})
	h.t.Deployed(t.Context(), "web", 1, true)
	h.settle(t, "web", Progressing)
	reader.obj = deployment("ns", "web", 2, 0) // what the API server had when the read was served
	done := make(chan error, 1)
	go func() { done <- h.t.Refresh(t.Context(), "web") }()
	<-reader.started
	h.w.set(deployment("ns", "web", 2, 2)) // the watch: Available meanwhile
	h.settle(t, "web", Healthy)
	close(reader.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if mh, _ := h.t.Module("web"); mh.Status != Healthy {
		t.Fatalf("after the overtaken read: %s (%s), want Healthy", mh.Status, mh.Message)
	}
}

// An object deleted and made again (a new UID) at a lower generation than
// Refresh read is the new object, not a late event: it counts.
func TestTrackerRefreshThenRecreated(t *testing.T) {
	t.Parallel()
	reader := &fakeReader{objs: map[kube.ObjectRef]map[string]any{}}
	h := newHarness(t, Options{ProgressTimeout: time.Minute, Objects: reader})
	dep := withUID(deployment("ns", "web", 5, 2), "a")
	h.w.set(dep)
	h.r.set("web", kube.ReleaseObjects{Revision: 1, Objects: []kube.ObjectRef{ref(dep)}})
	h.t.Deployed(t.Context(), "web", 1, true)
	h.settle(t, "web", Healthy)
	reader.objs[ref(dep)] = withUID(deployment("ns", "web", 5, 2), "a")
	if err := h.t.Refresh(t.Context(), "web"); err != nil {
		t.Fatal(err)
	}
	// a relist tells the recreated object as a modification
	h.w.set(withUID(deployment("ns", "web", 1, 0), "b"))
	h.settle(t, "web", Progressing)
}
