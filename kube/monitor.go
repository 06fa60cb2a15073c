package kube

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/itchyny/gojq"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/addonops/addon-operator/loader"
)

// MonitorSpec says which objects a kubernetes binding watches.
type MonitorSpec struct {
	// Name names the binding in Watches ("module/hook/binding"); optional.
	Name       string
	APIVersion string
	// Kind as a hook wrote it: "ConfigMap", or v0's lowercase "configmap".
	Kind string
	// Namespaces limits the objects to these namespaces (empty: all).
	Namespaces []string
	// NamespaceLabelSelector limits the objects to namespaces with these
	// labels; namespaces that gain or lose the labels are followed.
	NamespaceLabelSelector *metav1.LabelSelector
	LabelSelector          *metav1.LabelSelector
	// FieldSelector is a field selector string ("metadata.name=x").
	FieldSelector string
	// Names limits the objects to these names (empty: all).
	Names []string
	// Events the handler is told about (empty: all three).
	Events []string
	// JqFilter, when set, is applied to every object; an update whose
	// filter result did not change is not reported.
	JqFilter *gojq.Code
	// OnFilter, when set, is told how long each jqFilter run took (the
	// operator's kube_jq_filter_duration_seconds).
	OnFilter func(time.Duration)
	// Summarize, when set, is a Go filter: it runs instead of JqFilter on
	// every object as the API server sent it, and its result is kept and
	// reported as the filter result (an update with the same result is not
	// reported). Health uses it to keep an object's status, not the object.
	Summarize func(obj map[string]any) any
	// KeepFullObjects keeps whole objects in the snapshot; false keeps
	// only filter results (and the object's coordinates).
	KeepFullObjects bool
	// SyncTimeout bounds how long Start waits for the first list (0: as
	// long as Start's context lives); the monitor stops when it passes.
	SyncTimeout time.Duration
}

// ObjectEvent is one change the handler is told about.
type ObjectEvent struct {
	Type string
	// Object is the object (nil in a snapshot without full objects).
	Object map[string]any
	// FilterResult is the jqFilter's result (nil without a filter).
	FilterResult    any
	Namespace, Name string
}

// Monitor watches the objects of one binding through the Watcher's shared
// watches (client-go reflectors, which list, watch, back off and re-list
// after a watch expired or the API server went away): one per namespace,
// and one of namespaces with a namespace label selector. It keeps only its
// filter results; the shared store keeps the objects.
type Monitor struct {
	w       *Watcher
	spec    MonitorSpec
	name    string
	gvr     schema.GroupVersionResource
	kind    string
	handler func(ObjectEvent)
	// the selectors as the API server gets them
	labelSelector, fieldSelector string
	nsSelector                   *string // nil without a namespace label selector

	mu       sync.Mutex
	ctx      context.Context    // Start's
	sources  map[string]*source // by namespace ("" for all)
	nsSource *source            // the namespaces a namespace label selector picks
	synced   bool
	stopped  bool
	unhook   func() bool // stops ctx's end from calling Stop
	stopOnce sync.Once

	lastErr lastError // its watches' last list or watch error
}

// lastError is the last error a monitor's watches told it.
type lastError struct {
	mu  sync.Mutex
	err string
}

func (l *lastError) set(err error) {
	l.mu.Lock()
	l.err = err.Error()
	l.mu.Unlock()
}

func (l *lastError) get() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// NewMonitor resolves the kind through discovery (kinds and lowercase
// resource names both work) and prepares the monitor; Start runs it.
// handler runs on the watch's goroutine, one change at a time for every
// binding on the watch: it may read snapshots, and must not Stop a monitor
// (Stop waits for it).
func (w *Watcher) NewMonitor(spec MonitorSpec, handler func(ObjectEvent)) (*Monitor, error) {
	gv, err := schema.ParseGroupVersion(spec.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("apiVersion %q: %w", spec.APIVersion, err)
	}
	mapping, err := resolveKind(w.mapper, gv, spec.Kind)
	if r, ok := w.mapper.(meta.ResettableRESTMapper); ok && err != nil {
		// a kind installed since discovery was cached (a new CRD)
		r.Reset()
		mapping, err = resolveKind(w.mapper, gv, spec.Kind)
	}
	if err != nil {
		return nil, err
	}
	m := &Monitor{
		w: w, spec: spec, name: spec.Name, gvr: mapping.Resource, kind: mapping.GroupVersionKind.Kind, handler: handler,
		fieldSelector: spec.FieldSelector, sources: map[string]*source{},
	}
	if m.name == "" {
		m.name = fmt.Sprintf("monitor %d", w.seq.Add(1))
	}
	if spec.LabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(spec.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("labelSelector: %w", err)
		}
		m.labelSelector = sel.String()
	}
	if len(spec.Names) == 1 {
		// one name: let the API server select it
		m.fieldSelector = strings.Trim(m.fieldSelector+",metadata.name="+spec.Names[0], ",")
	}
	if spec.NamespaceLabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(spec.NamespaceLabelSelector)
		if err != nil {
			return nil, fmt.Errorf("namespace labelSelector: %w", err)
		}
		s := sel.String()
		m.nsSelector = &s
	}
	return m, nil
}

func resolveKind(mapper meta.RESTMapper, gv schema.GroupVersion, kind string) (*meta.RESTMapping, error) {
	if m, err := mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: kind}, versions(gv)...); err == nil {
		// the mapper matches kinds case-insensitively and echoes the input:
		// ask it for the kind of the resource it found
		if gvk, err := mapper.KindFor(m.Resource); err == nil {
			m.GroupVersionKind = gvk
		}
		return m, nil
	}
	// v0 hooks write kinds in lowercase ("configmap"): resolve as a resource name
	gvk, err := mapper.KindFor(schema.GroupVersionResource{Group: gv.Group, Version: gv.Version, Resource: strings.ToLower(kind)})
	if err != nil {
		return nil, fmt.Errorf("kind %q: not served by the API server: %w", kind, err)
	}
	return mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
}

func versions(gv schema.GroupVersion) []string {
	if gv.Version == "" {
		return nil
	}
	return []string{gv.Version}
}

// Kind is the resolved kind ("ConfigMap").
func (m *Monitor) Kind() string { return m.kind }

// LastError is the last list or watch error ("" when none happened yet).
func (m *Monitor) LastError() string { return m.lastErr.get() }

// Start joins the shared watches and waits for their first list: the
// objects of that list are not reported as events; Snapshot holds them
// (Synchronization). A watch that another monitor synced already hands
// over its current objects at once. The monitor stops when ctx ends.
func (m *Monitor) Start(ctx context.Context) error {
	m.mu.Lock()
	m.ctx = ctx
	m.unhook = context.AfterFunc(ctx, m.Stop)
	m.mu.Unlock()
	waitCtx := ctx
	if m.spec.SyncTimeout > 0 {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, m.spec.SyncTimeout)
		defer cancel()
	}
	if err := m.open(ctx, waitCtx); err != nil {
		m.Stop()
		return err
	}
	m.mu.Lock()
	stopped := m.stopped
	m.synced = !stopped
	m.mu.Unlock()
	if stopped {
		return fmt.Errorf("watch %s: stopped before the first list", m.kind)
	}
	return nil
}

// wait waits for a member's first list.
func wait(ctx context.Context, ready chan error) error {
	select {
	case err := <-ready:
		return err
	case <-ctx.Done():
		return fmt.Errorf("not synced: %w", ctx.Err())
	}
}

// Stop leaves the shared watches (a watch stops with its last monitor);
// the handler is not called once it returned.
func (m *Monitor) Stop() { m.stopOnce.Do(m.stop) }

func (m *Monitor) stop() {
	m.mu.Lock()
	m.stopped = true
	ns, unhook := m.nsSource, m.unhook
	m.nsSource = nil
	m.mu.Unlock()
	if unhook != nil {
		unhook()
	}
	if ns != nil {
		ns.close(false) // no namespace adds a source after this
	}
	m.mu.Lock()
	sources := m.sources
	m.sources = map[string]*source{}
	m.mu.Unlock()
	for _, s := range sources {
		s.close(false)
	}
}

// observe reports a change when the binding wants it: not before the
// monitor synced (the first list is the snapshot), not after it stopped,
// not an event type it excludes.
func (m *Monitor) observe(c change) {
	m.mu.Lock()
	live := m.synced && !m.stopped
	m.mu.Unlock()
	if !live || (len(m.spec.Events) > 0 && !slices.Contains(m.spec.Events, c.typ)) {
		return
	}
	obj := c.object
	if obj == nil {
		if c.typ == loader.EventDeleted && !m.spec.KeepFullObjects {
			obj = deletedStub(c.rec, m.gvr, m.kind)
		} else {
			obj = c.rec.object()
		}
	}
	defer recoverPanic("monitor of " + m.kind)
	m.handler(ObjectEvent{Type: c.typ, Object: obj, FilterResult: c.result, Namespace: c.rec.namespace, Name: c.rec.name})
}

// stub is what a Deleted event carries when the object itself was not kept.
func deletedStub(rec *record, gvr schema.GroupVersionResource, kind string) map[string]any {
	md := map[string]any{"name": rec.name}
	if rec.namespace != "" {
		md["namespace"] = rec.namespace
	}
	return map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": kind, "metadata": md}
}

func (m *Monitor) current() []*source {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*source, 0, len(m.sources))
	for _, s := range m.sources {
		out = append(out, s)
	}
	return out
}

// Len is the number of watched objects.
func (m *Monitor) Len() int {
	n := 0
	for _, s := range m.current() {
		n += s.sw.count(s.mb)
	}
	return n
}

// Snapshot lists the watched objects, sorted by namespace and name.
func (m *Monitor) Snapshot() []ObjectEvent {
	out := []ObjectEvent{}
	for _, s := range m.current() {
		out = append(out, s.sw.snapshot(s.mb)...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}
