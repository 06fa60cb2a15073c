package health

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/addonops/addon-operator/kube"
)

// statuses reads transitions until the module reaches want, and returns
// the statuses it passed through (From of the first, then each To).
func (h *harness) until(tb testing.TB, want Status) []Status {
	tb.Helper()
	var got []Status
	for {
		tr := h.next(tb)
		got = append(got, tr.Health.Status)
		if tr.Health.Status == want {
			return got
		}
	}
}

// A module's transitions, each told once: Progressing while its Deployment
// rolls out, Healthy when it is Available, Degraded at once when it breaks
// at the same generation, Healthy again, Progressing through a new
// generation and Degraded when the timeout passes.
func TestTrackerTransitions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{ProgressTimeout: time.Minute})
	dep := deployment("ns", "web", 1, 0)
	h.w.set(dep)
	h.w.set(configMap("ns", "web-config"))
	h.r.set("web", kube.ReleaseObjects{Revision: 1, Objects: []kube.ObjectRef{ref(dep), ref(configMap("ns", "web-config"))}})
	h.t.Deployed(t.Context(), "web", 1, true)
	if got := h.until(t, Progressing); got[0] != Unknown && got[0] != Progressing {
		t.Fatalf("first statuses %v: want Unknown (not listed) or Progressing", got)
	}
	mh := h.settle(t, "web", Progressing)
	// the ConfigMap's watch may list after the Deployment's: Progressing
	// ranks above its Unknown
	for deadline := time.Now().Add(5 * time.Second); len(mh.Objects) > 1 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		mh, _ = h.t.Module("web")
	}
	if len(mh.Objects) != 1 || mh.Objects[0].Name != "web" || mh.Objects[0].Status != "InProgress" || mh.Total != 2 {
		t.Fatalf("objects not Current: %+v", mh)
	}
	h.w.set(deployment("ns", "web", 1, 2))
	if tr := h.next(t); tr.Health.Status != Healthy || tr.From != Progressing {
		t.Fatalf("transition %+v, want Progressing → Healthy", tr)
	}
	// the same object again, and an update that changes nothing kstatus
	// sees: no transition
	h.w.set(deployment("ns", "web", 1, 2))
	// breakage at the same generation: Degraded at once, no timeout
	h.w.set(deployment("ns", "web", 1, 1))
	tr := h.next(t)
	if tr.Health.Status != Degraded || !strings.Contains(tr.Health.Message, "Deployment/ns/web: was Current at generation 1") {
		t.Fatalf("transition %+v, want Degraded naming the Deployment", tr)
	}
	h.w.set(deployment("ns", "web", 1, 2))
	if tr := h.next(t); tr.Health.Status != Healthy {
		t.Fatalf("transition %+v, want Healthy", tr)
	}
	// someone's rollout (a new generation): Progressing, then Degraded once
	// the timeout passes on the clock
	h.clock.Advance(10 * time.Minute)
	h.w.set(deployment("ns", "web", 2, 1))
	if tr := h.next(t); tr.Health.Status != Progressing {
		t.Fatalf("transition %+v, want Progressing", tr)
	}
	// the tracker sets its timer after it tells the transition
	for deadline := time.Now().Add(5 * time.Second); h.clock.LongestWait() < time.Minute && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	h.clock.Advance(59 * time.Second)
	select {
	case tr := <-h.trs:
		t.Fatalf("transition %+v before the timeout", tr)
	case <-time.After(50 * time.Millisecond):
	}
	h.clock.Advance(time.Second)
	if tr := h.next(t); tr.Health.Status != Degraded || !strings.Contains(tr.Health.Message, "not Current 1m0s after its rollout") {
		t.Fatalf("transition %+v, want Degraded after the timeout", tr)
	}
	select {
	case tr := <-h.trs:
		t.Fatalf("an extra transition %+v", tr)
	case <-time.After(50 * time.Millisecond):
	}
}

// A chart's annotation sets its module's progress timeout.
func TestTrackerTimeoutAnnotation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{ProgressTimeout: time.Hour})
	dep := deployment("ns", "slow", 1, 0)
	h.w.set(dep)
	h.r.set("slow", kube.ReleaseObjects{Revision: 1, Objects: []kube.ObjectRef{ref(dep)}, Annotations: map[string]string{TimeoutAnnotation: "5s"}})
	h.t.Deployed(t.Context(), "slow", 1, true)
	h.settle(t, "slow", Progressing)
	h.clock.Advance(5 * time.Second)
	h.settle(t, "slow", Degraded)
}

// Modules with objects of one kind in one namespace share one monitor; it
// stops when the last of them is removed. A deploy that changed nothing
// does not read the release again.
func TestTrackerSharesWatches(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	for _, name := range []string{"a", "b", "c"} {
		dep := deployment("ns", name, 1, 2)
		h.w.set(dep)
		h.r.set(name, kube.ReleaseObjects{Revision: 1, Objects: []kube.ObjectRef{ref(dep)}})
		h.t.Deployed(t.Context(), name, 1, true)
		h.settle(t, name, Healthy)
	}
	if h.w.opened != 1 || h.w.running() != 1 {
		t.Fatalf("%d monitors opened, %d running; want one shared", h.w.opened, h.w.running())
	}
	reads := h.r.reads
	h.t.Deployed(t.Context(), "a", 1, false)
	if h.r.reads != reads {
		t.Fatal("an unchanged release was read again")
	}
	h.t.Removed("a")
	h.t.Removed("b")
	if h.w.running() != 1 {
		t.Fatal("the monitor stopped while a module still needs it")
	}
	if _, ok := h.t.Module("a"); ok {
		t.Fatal("a removed module still has a health")
	}
	h.t.Removed("c")
	if h.w.running() != 0 {
		t.Fatal("the monitor outlived its last module")
	}
}

// A listener that blocks holds neither the watch's handler nor /status.
func TestTrackerSlowListener(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	defer close(block)
	h := newHarness(t, Options{OnTransition: func(Transition) { <-block }})
	dep := deployment("ns", "web", 1, 2)
	h.w.set(dep)
	h.r.set("web", kube.ReleaseObjects{Revision: 1, Objects: []kube.ObjectRef{ref(dep)}})
	h.t.Deployed(t.Context(), "web", 1, true)
	h.settle(t, "web", Healthy)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 100 {
			h.w.set(deployment("ns", "web", 1, int64(i%2+1)))
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("watch events wait for the listener")
	}
	h.settle(t, "web", Healthy)
}

// A deleted object is NotFound: Degraded past the timeout; the module's
// metric series say so, and the operator's is the worst module's.
func TestTrackerMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{ProgressTimeout: time.Minute})
	good, gone := deployment("ns", "good", 1, 2), deployment("ns", "gone", 1, 2)
	h.w.set(good)
	h.w.set(gone)
	h.r.set("good", kube.ReleaseObjects{Revision: 1, Objects: []kube.ObjectRef{ref(good)}})
	h.r.set("gone", kube.ReleaseObjects{Revision: 1, Objects: []kube.ObjectRef{ref(gone)}})
	h.t.Deployed(t.Context(), "good", 1, true)
	h.t.Deployed(t.Context(), "gone", 1, true)
	h.settle(t, "gone", Healthy)
	h.clock.Advance(2 * time.Minute)
	h.w.del(gone)
	mh := h.settle(t, "gone", Degraded)
	if mh.Message != "Deployment/ns/gone: not found" || mh.Objects[0].Status != "NotFound" {
		t.Fatalf("health %+v, want the Deployment NotFound", mh)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(h.t))
	want := `
# HELP addon_operator_health Health of the operator's modules: the worst module status (Degraded, Progressing, Unknown, Healthy), 1 for it and 0 for the others.
# TYPE addon_operator_health gauge
addon_operator_health{status="Degraded"} 1
addon_operator_health{status="Healthy"} 0
addon_operator_health{status="Progressing"} 0
addon_operator_health{status="Unknown"} 0
# HELP addon_operator_module_health Health of an enabled module's release objects: 1 for its current status, 0 for the others.
# TYPE addon_operator_module_health gauge
addon_operator_module_health{module="gone",status="Degraded"} 1
addon_operator_module_health{module="gone",status="Healthy"} 0
addon_operator_module_health{module="gone",status="Progressing"} 0
addon_operator_module_health{module="gone",status="Unknown"} 0
addon_operator_module_health{module="good",status="Degraded"} 0
addon_operator_module_health{module="good",status="Healthy"} 1
addon_operator_module_health{module="good",status="Progressing"} 0
addon_operator_module_health{module="good",status="Unknown"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
