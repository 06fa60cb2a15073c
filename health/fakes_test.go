package health

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/addonops/addon-operator/internal/testclock"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
)

// clock moves only when the test advances it.
type clock = testclock.Manual

func newClock() *clock { return testclock.New() }

// fakeWatches hands out monitors whose objects the test sets.
type fakeWatches struct {
	mu       sync.Mutex
	monitors map[watchKey]*fakeMonitor
	opened   int
	objects  map[watchKey]map[string]map[string]any // the cluster, by watch and name
}

var _ Watches = (*fakeWatches)(nil)

func newFakeWatches() *fakeWatches {
	return &fakeWatches{monitors: map[watchKey]*fakeMonitor{}, objects: map[watchKey]map[string]map[string]any{}}
}

func keyOf(obj map[string]any) (watchKey, string) {
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	return watchKey{obj["apiVersion"].(string), obj["kind"].(string), ns}, name
}

func (f *fakeWatches) Watch(spec kube.MonitorSpec, handler func(kube.ObjectEvent)) (Monitor, error) {
	key := watchKey{spec.APIVersion, spec.Kind, ""}
	if len(spec.Namespaces) == 1 {
		key.namespace = spec.Namespaces[0]
	}
	m := &fakeMonitor{f: f, key: key, handler: handler, summarize: spec.Summarize}
	f.mu.Lock()
	f.monitors[key] = m
	f.opened++
	f.mu.Unlock()
	return m, nil
}

// set puts an object in the cluster and tells the monitor of its kind.
func (f *fakeWatches) set(obj map[string]any) {
	key, name := keyOf(obj)
	f.mu.Lock()
	if f.objects[key] == nil {
		f.objects[key] = map[string]map[string]any{}
	}
	typ := loader.EventModified
	if f.objects[key][name] == nil {
		typ = loader.EventAdded
	}
	f.objects[key][name] = obj
	m := f.monitors[key]
	f.mu.Unlock()
	if m != nil && m.live() {
		m.handler(kube.ObjectEvent{Type: typ, Namespace: key.namespace, Name: name, Object: obj, FilterResult: m.summarize(obj)})
	}
}

func (f *fakeWatches) del(obj map[string]any) {
	key, name := keyOf(obj)
	f.mu.Lock()
	delete(f.objects[key], name)
	m := f.monitors[key]
	f.mu.Unlock()
	if m != nil && m.live() {
		m.handler(kube.ObjectEvent{Type: loader.EventDeleted, Namespace: key.namespace, Name: name, Object: obj, FilterResult: m.summarize(obj)})
	}
}

func (f *fakeWatches) running() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, m := range f.monitors {
		if m.live() {
			n++
		}
	}
	return n
}

type fakeMonitor struct {
	f         *fakeWatches
	key       watchKey
	handler   func(kube.ObjectEvent)
	summarize func(map[string]any) any
	mu        sync.Mutex
	started   bool
	stopped   bool
}

func (m *fakeMonitor) Start(context.Context) error {
	m.mu.Lock()
	m.started = true
	m.mu.Unlock()
	return nil
}

func (m *fakeMonitor) Stop() {
	m.mu.Lock()
	m.stopped = true
	m.mu.Unlock()
}

func (m *fakeMonitor) live() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.started && !m.stopped
}

func (m *fakeMonitor) Snapshot() []kube.ObjectEvent {
	m.f.mu.Lock()
	defer m.f.mu.Unlock()
	var out []kube.ObjectEvent
	for name, obj := range m.f.objects[m.key] {
		out = append(out, kube.ObjectEvent{Namespace: m.key.namespace, Name: name, Object: obj, FilterResult: m.summarize(obj)})
	}
	return out
}

// fakeReleases answers ReleaseObjects from a map.
type fakeReleases struct {
	mu    sync.Mutex
	rels  map[string]kube.ReleaseObjects
	reads int
}

func (f *fakeReleases) ReleaseObjects(_ context.Context, name string) (kube.ReleaseObjects, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return f.rels[name], nil
}

func (f *fakeReleases) set(name string, ro kube.ReleaseObjects) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rels == nil {
		f.rels = map[string]kube.ReleaseObjects{}
	}
	f.rels[name] = ro
}

// deployment is a Deployment of 2 replicas, ready of them available, at
// generation gen (observed).
func deployment(ns, name string, gen int64, ready int64) map[string]any {
	cond := "True"
	if ready < 2 {
		cond = "False"
	}
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": ns, "name": name, "generation": gen},
		"spec":     map[string]any{"replicas": int64(2)},
		"status": map[string]any{
			"observedGeneration": gen, "replicas": int64(2), "updatedReplicas": int64(2),
			"readyReplicas": ready, "availableReplicas": ready,
			"conditions": []any{map[string]any{"type": "Available", "status": cond}},
		},
	}
}

func configMap(ns, name string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"namespace": ns, "name": name}}
}

func ref(obj map[string]any) kube.ObjectRef {
	key, name := keyOf(obj)
	return kube.ObjectRef{APIVersion: key.apiVersion, Kind: key.kind, Namespace: key.namespace, Name: name}
}

// harness runs a Tracker on fakes; transitions arrive on trs.
type harness struct {
	t     *Tracker
	w     *fakeWatches
	r     *fakeReleases
	clock *clock
	trs   chan Transition
}

func newHarness(tb testing.TB, opts Options) *harness {
	tb.Helper()
	h := &harness{w: newFakeWatches(), r: &fakeReleases{}, clock: newClock(), trs: make(chan Transition, 100)}
	opts.Now, opts.After = h.clock.Now, h.clock.After
	opts.Logger = slog.New(slog.DiscardHandler)
	if opts.OnTransition == nil {
		opts.OnTransition = func(tr Transition) { h.trs <- tr }
	}
	h.t = NewTracker(h.w, h.r, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.t.Run(ctx)
	}()
	tb.Cleanup(func() {
		cancel()
		<-done
	})
	return h
}

// next waits for the next transition.
func (h *harness) next(tb testing.TB) Transition {
	tb.Helper()
	select {
	case tr := <-h.trs:
		return tr
	case <-time.After(5 * time.Second):
		tb.Fatal("no transition")
		return Transition{}
	}
}

// settle waits until module's health is want.
func (h *harness) settle(tb testing.TB, module string, want Status) ModuleHealth {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		mh, _ := h.t.Module(module)
		if mh.Status == want {
			return mh
		}
		if time.Now().After(deadline) {
			tb.Fatalf("module %s: health %+v, want %s", module, mh, want)
		}
		time.Sleep(time.Millisecond)
	}
}
