package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/itchyny/gojq"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
)

// Watch event types, as hooks see them.
const (
	Added    = "Added"
	Modified = "Modified"
	Deleted  = "Deleted"
)

// MonitorSpec says which objects a kubernetes binding watches.
type MonitorSpec struct {
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
	// KeepFullObjects keeps whole objects in the snapshot; false keeps
	// only filter results (and the object's coordinates).
	KeepFullObjects bool
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

// entry is what a monitor keeps of one object.
type entry struct {
	object          map[string]any // nil unless full objects are kept
	filterResult    any
	namespace, name string
	resourceVersion string
	src             *source
}

// Watcher creates monitors: it resolves kinds through discovery (a kind
// installed later, such as a new CRD, is found by refreshing the cache).
type Watcher struct {
	client dynamic.Interface
	mapper meta.RESTMapper
	logger *slog.Logger
}

// NewWatcher makes a Watcher for the API server of cfg.
func NewWatcher(cfg *rest.Config, logger *slog.Logger) (*Watcher, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Watcher{client: client, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), logger: logger}, nil
}

// Monitor watches the objects of one binding. It keeps its own store
// (only filter results when full objects are not kept) behind client-go
// reflectors, which list, watch, back off and re-list after a watch expired
// or the API server went away.
type Monitor struct {
	spec    MonitorSpec
	gvr     schema.GroupVersionResource
	kind    string
	client  dynamic.Interface
	handler func(ObjectEvent)
	logger  *slog.Logger

	mu      sync.Mutex
	objects map[string]*entry // by namespace/name
	sources map[string]*source
	synced  bool
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	lastErr string
	// startErr gets the first request error the API server refuses
	// before the first list completed (a bad selector, missing RBAC).
	startErr chan error
}

// NewMonitor resolves the kind through discovery (kinds and lowercase
// resource names both work) and prepares the monitor; Start runs it.
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
	return &Monitor{
		spec: spec, gvr: mapping.Resource, kind: mapping.GroupVersionKind.Kind, client: w.client, handler: handler,
		logger:  w.logger.With("kind", mapping.GroupVersionKind.Kind),
		objects: map[string]*entry{}, sources: map[string]*source{}, startErr: make(chan error, 1),
	}, nil
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
func (m *Monitor) LastError() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastErr
}

// Start runs the reflectors and waits for their first list: the objects
// of that list are not reported as events; Snapshot holds them
// (Synchronization).
func (m *Monitor) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	m.mu.Lock()
	m.ctx, m.cancel = ctx, cancel
	m.mu.Unlock()
	if m.spec.NamespaceLabelSelector != nil {
		nw := &namespaceWatch{m: m, synced: make(chan struct{}), current: map[string]bool{}}
		sel, err := metav1.LabelSelectorAsSelector(m.spec.NamespaceLabelSelector)
		if err != nil {
			cancel()
			return err
		}
		nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
		m.run(ctx, "namespaces", m.client.Resource(nsGVR), sel.String(), "", nw)
		select {
		case <-nw.synced:
		case err := <-m.startErr:
			m.Stop()
			return fmt.Errorf("watch namespaces for %s: %w", m.kind, err)
		case <-ctx.Done():
			return fmt.Errorf("watch namespaces for %s: %w", m.kind, ctx.Err())
		}
	} else {
		namespaces := m.spec.Namespaces
		if len(namespaces) == 0 {
			namespaces = []string{metav1.NamespaceAll}
		}
		for _, ns := range namespaces {
			m.addSource(ns)
		}
	}
	m.mu.Lock()
	var waits []chan struct{}
	for _, s := range m.sources {
		waits = append(waits, s.synced)
	}
	m.mu.Unlock()
	for _, w := range waits {
		select {
		case <-w:
		case err := <-m.startErr:
			m.Stop()
			return fmt.Errorf("watch %s: %w", m.kind, err)
		case <-ctx.Done():
			return fmt.Errorf("watch %s: not synced: %w", m.kind, ctx.Err())
		}
	}
	m.mu.Lock()
	m.synced = true
	m.mu.Unlock()
	return nil
}

// Stop stops the reflectors and waits for them.
func (m *Monitor) Stop() {
	m.mu.Lock()
	cancel := m.cancel
	m.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	m.wg.Wait()
}

// run starts one reflector over ri into store.
func (m *Monitor) run(ctx context.Context, name string, ri dynamic.ResourceInterface, labelSel, fieldSel string, store cache.ReflectorStore) {
	tweak := func(o *metav1.ListOptions) { o.LabelSelector, o.FieldSelector = labelSel, fieldSel }
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(&o)
			list, err := ri.List(ctx, o)
			m.noteError(err)
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			w, err := ri.Watch(ctx, o)
			m.noteError(err)
			return w, err
		},
	}
	r := cache.NewReflectorWithOptions(lw, &unstructured.Unstructured{}, store, cache.ReflectorOptions{Name: m.kind + " " + name})
	m.wg.Go(func() { r.RunWithContext(ctx) })
}

// noteError logs a list or watch error once. Before the first list
// completed, an error the API server answered with (not a broken
// connection, which the reflector outlasts) fails Start.
func (m *Monitor) noteError(err error) {
	if err == nil || m.ctxDone() {
		return
	}
	m.mu.Lock()
	repeated := m.lastErr == err.Error()
	m.lastErr = err.Error()
	synced := m.synced
	m.mu.Unlock()
	if !synced && refused(err) {
		select {
		case m.startErr <- err:
		default:
		}
	}
	if !repeated {
		m.logger.Warn("list/watch failed; retrying with backoff", "err", err)
	}
}

func refused(err error) bool {
	return apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) ||
		apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsMethodNotSupported(err)
}

func (m *Monitor) ctxDone() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ctx != nil && m.ctx.Err() != nil
}

// addSource starts watching the objects of one namespace ("" for all).
func (m *Monitor) addSource(ns string) {
	m.mu.Lock()
	if _, ok := m.sources[ns]; ok || m.ctx == nil {
		m.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(m.ctx)
	s := &source{m: m, ns: ns, cancel: cancel, synced: make(chan struct{})}
	m.sources[ns] = s
	m.mu.Unlock()
	var ri dynamic.ResourceInterface = m.client.Resource(m.gvr)
	if ns != "" {
		ri = m.client.Resource(m.gvr).Namespace(ns)
	}
	var labelSel string
	if m.spec.LabelSelector != nil {
		if sel, err := metav1.LabelSelectorAsSelector(m.spec.LabelSelector); err == nil {
			labelSel = sel.String()
		}
	}
	fieldSel := m.spec.FieldSelector
	if len(m.spec.Names) == 1 {
		// one name: let the API server select it
		fieldSel = strings.Trim(fieldSel+",metadata.name="+m.spec.Names[0], ",")
	}
	m.run(ctx, "in "+ns, ri, labelSel, fieldSel, s)
}

// removeSource stops watching a namespace that left the selection; its
// objects are reported as Deleted, since the binding no longer sees them.
func (m *Monitor) removeSource(ns string) {
	m.mu.Lock()
	s := m.sources[ns]
	delete(m.sources, ns)
	m.mu.Unlock()
	if s != nil {
		s.cancel()
		m.forget(s, nil)
	}
}

// forget drops the objects of s that are not in keep and reports them as
// Deleted, by namespace and name.
func (m *Monitor) forget(s *source, keep map[string]bool) {
	m.mu.Lock()
	var gone []*entry
	for key, e := range m.objects {
		if e.src == s && !keep[key] {
			gone = append(gone, e)
			delete(m.objects, key)
		}
	}
	m.mu.Unlock()
	sortEntries(gone)
	for _, e := range gone {
		m.report(Deleted, m.stub(e), e.filterResult, e)
	}
}

func (m *Monitor) isSynced() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.synced
}

// observe records one object and reports the change when the binding
// wants it: not during the first list, not an update whose resource
// version or filter result did not change, not an event type it excludes.
func (m *Monitor) observe(s *source, typ string, obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if len(m.spec.Names) > 0 && !slices.Contains(m.spec.Names, u.GetName()) {
		return
	}
	key := u.GetNamespace() + "/" + u.GetName()
	e := m.entryFor(s, u)
	m.mu.Lock()
	prev := m.objects[key]
	if typ == Deleted {
		delete(m.objects, key)
	} else {
		m.objects[key] = e
	}
	m.mu.Unlock()
	if typ == Added && prev != nil {
		typ = Modified // seen again after a re-list
	}
	if typ == Modified && prev != nil {
		if prev.resourceVersion == e.resourceVersion {
			return // a re-list brought the same version
		}
		if m.spec.JqFilter != nil && reflect.DeepEqual(prev.filterResult, e.filterResult) {
			return // the part the hook filters on did not change
		}
	}
	m.report(typ, u.Object, e.filterResult, e)
}

// entryFor applies the filter and keeps what the binding needs of u.
func (m *Monitor) entryFor(s *source, u *unstructured.Unstructured) *entry {
	e := &entry{namespace: u.GetNamespace(), name: u.GetName(), resourceVersion: u.GetResourceVersion(), src: s}
	if m.spec.JqFilter != nil {
		var err error
		if e.filterResult, err = runJq(m.spec.JqFilter, u.Object); err != nil {
			e.filterResult = map[string]any{"error": err.Error()}
		}
	}
	if m.spec.KeepFullObjects || m.spec.JqFilter == nil {
		e.object = u.Object
	}
	return e
}

func (m *Monitor) report(typ string, obj map[string]any, result any, e *entry) {
	if !m.isSynced() || (len(m.spec.Events) > 0 && !slices.Contains(m.spec.Events, typ)) {
		return
	}
	defer recoverPanic("monitor of " + m.kind)
	m.handler(ObjectEvent{Type: typ, Object: obj, FilterResult: result, Namespace: e.namespace, Name: e.name})
}

// stub is what a Deleted event carries when the object itself was not kept.
func (m *Monitor) stub(e *entry) map[string]any {
	if e.object != nil {
		return e.object
	}
	md := map[string]any{"name": e.name}
	if e.namespace != "" {
		md["namespace"] = e.namespace
	}
	return map[string]any{"apiVersion": m.gvr.GroupVersion().String(), "kind": m.kind, "metadata": md}
}

// replace handles a (re-)list. Before the monitor synced nothing is
// reported (report checks), so the first list only fills the store; later
// ones report what changed in between.
func (m *Monitor) replace(s *source, list []any) {
	seen := map[string]bool{}
	for _, obj := range list {
		if o, ok := obj.(metav1.Object); ok {
			seen[o.GetNamespace()+"/"+o.GetName()] = true
		}
		m.observe(s, Added, obj)
	}
	m.forget(s, seen)
}

func sortEntries(es []*entry) {
	sort.Slice(es, func(i, j int) bool {
		if es[i].namespace != es[j].namespace {
			return es[i].namespace < es[j].namespace
		}
		return es[i].name < es[j].name
	})
}

// Len is the number of watched objects.
func (m *Monitor) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.objects)
}

// Snapshot lists the watched objects, sorted by namespace and name.
func (m *Monitor) Snapshot() []ObjectEvent {
	m.mu.Lock()
	es := make([]*entry, 0, len(m.objects))
	for _, e := range m.objects {
		es = append(es, e)
	}
	m.mu.Unlock()
	sortEntries(es)
	out := make([]ObjectEvent, len(es))
	for i, e := range es {
		out[i] = ObjectEvent{Object: e.object, FilterResult: e.filterResult, Namespace: e.namespace, Name: e.name}
	}
	return out
}

// source is the store of one namespace's reflector.
type source struct {
	m        *Monitor
	ns       string
	cancel   context.CancelFunc
	synced   chan struct{}
	syncOnce sync.Once
}

var _ cache.ReflectorStore = (*source)(nil)

func (s *source) Add(obj any) error    { s.m.observe(s, Added, obj); return nil }
func (s *source) Update(obj any) error { s.m.observe(s, Modified, obj); return nil }
func (s *source) Delete(obj any) error { s.m.observe(s, Deleted, obj); return nil }
func (s *source) Resync() error        { return nil }
func (s *source) Replace(list []any, _ string) error {
	s.m.replace(s, list)
	s.syncOnce.Do(func() { close(s.synced) })
	return nil
}

// namespaceWatch follows the namespaces a namespace label selector picks
// and starts or stops a source for each.
type namespaceWatch struct {
	m        *Monitor
	synced   chan struct{}
	syncOnce sync.Once
	mu       sync.Mutex
	current  map[string]bool
}

var _ cache.ReflectorStore = (*namespaceWatch)(nil)

func (n *namespaceWatch) name(obj any) string {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if o, ok := obj.(metav1.Object); ok {
		return o.GetName()
	}
	return ""
}

// selected applies the binding's namespace names on top of the labels.
func (n *namespaceWatch) selected(ns string) bool {
	return ns != "" && (len(n.m.spec.Namespaces) == 0 || slices.Contains(n.m.spec.Namespaces, ns))
}

func (n *namespaceWatch) Add(obj any) error {
	if ns := n.name(obj); n.selected(ns) {
		n.mu.Lock()
		n.current[ns] = true
		n.mu.Unlock()
		n.m.addSource(ns)
	}
	return nil
}

func (n *namespaceWatch) Update(obj any) error { return n.Add(obj) }

func (n *namespaceWatch) Delete(obj any) error {
	ns := n.name(obj)
	n.mu.Lock()
	delete(n.current, ns)
	n.mu.Unlock()
	n.m.removeSource(ns)
	return nil
}

func (n *namespaceWatch) Resync() error { return nil }

func (n *namespaceWatch) Replace(list []any, _ string) error {
	want := map[string]bool{}
	for _, obj := range list {
		if ns := n.name(obj); n.selected(ns) {
			want[ns] = true
		}
	}
	n.mu.Lock()
	old := n.current
	n.current = want
	n.mu.Unlock()
	for ns := range old {
		if !want[ns] {
			n.m.removeSource(ns)
		}
	}
	for ns := range want {
		n.m.addSource(ns)
	}
	n.syncOnce.Do(func() { close(n.synced) })
	return nil
}

// runJq applies a compiled filter; several results become a list.
func runJq(code *gojq.Code, obj map[string]any) (any, error) {
	// gojq wants plain JSON types (int64 in unstructured objects is not one)
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	iter := code.RunWithContext(ctx, v)
	var results []any
	for {
		r, ok := iter.Next()
		if !ok {
			break
		}
		if err, isErr := r.(error); isErr {
			return nil, err
		}
		results = append(results, r)
	}
	if len(results) == 1 {
		return results[0], nil
	}
	return results, nil
}
