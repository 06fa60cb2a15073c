package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/itchyny/gojq"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
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
	Namespaces    []string
	LabelSelector *metav1.LabelSelector
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

type entry struct {
	object       map[string]any
	filterResult any
	namespace    string
	name         string
}

// Monitor watches the objects of one binding through an informer.
type Monitor struct {
	spec    MonitorSpec
	gvr     schema.GroupVersionResource
	kind    string
	client  dynamic.Interface
	handler func(ObjectEvent)

	mu      sync.Mutex
	objects map[string]*entry // by namespace/name
	synced  bool
	cancel  context.CancelFunc
}

// NewMonitor resolves the kind through discovery (kinds and lowercase
// resource names both work) and prepares the informer.
func NewMonitor(client dynamic.Interface, mapper meta.RESTMapper, spec MonitorSpec, handler func(ObjectEvent)) (*Monitor, error) {
	gv, err := schema.ParseGroupVersion(spec.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("apiVersion %q: %w", spec.APIVersion, err)
	}
	mapping, err := resolveKind(mapper, gv, spec.Kind)
	if err != nil {
		return nil, err
	}
	return &Monitor{spec: spec, gvr: mapping.Resource, kind: mapping.GroupVersionKind.Kind, client: client, handler: handler, objects: map[string]*entry{}}, nil
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

// Start runs the informers and waits for their first list: the events
// of that list are not reported; Snapshot holds them (Synchronization).
func (m *Monitor) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	m.mu.Lock()
	m.cancel = cancel
	m.mu.Unlock()
	namespaces := m.spec.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	var labelSel string
	if m.spec.LabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(m.spec.LabelSelector)
		if err != nil {
			cancel()
			return err
		}
		labelSel = sel.String()
	}
	var syncs []cache.InformerSynced
	for _, ns := range namespaces {
		factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(m.client, 0, ns, func(o *metav1.ListOptions) {
			o.LabelSelector, o.FieldSelector = labelSel, m.spec.FieldSelector
		})
		inf := factory.ForResource(m.gvr).Informer()
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			AddFunc:    func(obj any, initial bool) { m.observe(Added, obj, initial) },
			UpdateFunc: func(_, obj any) { m.observe(Modified, obj, false) },
			DeleteFunc: func(obj any) { m.observe(Deleted, obj, false) },
		})
		if err != nil {
			cancel()
			return err
		}
		factory.Start(ctx.Done())
		syncs = append(syncs, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), syncs...) {
		cancel()
		return fmt.Errorf("watch %s: not synced: %w", m.kind, ctx.Err())
	}
	m.mu.Lock()
	m.synced = true
	m.mu.Unlock()
	return nil
}

// Stop stops the informers.
func (m *Monitor) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cancel != nil {
		m.cancel()
	}
}

func (m *Monitor) observe(typ string, obj any, initial bool) {
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
	var result any
	if m.spec.JqFilter != nil {
		var err error
		if result, err = runJq(m.spec.JqFilter, u.Object); err != nil {
			result = map[string]any{"error": err.Error()}
		}
	}
	m.mu.Lock()
	prev := m.objects[key]
	if typ == Deleted {
		delete(m.objects, key)
	} else {
		e := &entry{filterResult: result, namespace: u.GetNamespace(), name: u.GetName()}
		if m.spec.KeepFullObjects || m.spec.JqFilter == nil {
			e.object = u.Object
		}
		m.objects[key] = e
	}
	report := m.synced && !initial
	m.mu.Unlock()
	if !report || (len(m.spec.Events) > 0 && !slices.Contains(m.spec.Events, typ)) {
		return
	}
	if typ == Modified && m.spec.JqFilter != nil && prev != nil && reflect.DeepEqual(prev.filterResult, result) {
		return // the part the hook filters on did not change
	}
	m.handler(ObjectEvent{Type: typ, Object: u.Object, FilterResult: result, Namespace: u.GetNamespace(), Name: u.GetName()})
}

// Snapshot lists the watched objects, sorted by namespace and name.
func (m *Monitor) Snapshot() []ObjectEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ObjectEvent, 0, len(m.objects))
	for _, e := range m.objects {
		out = append(out, ObjectEvent{Object: e.object, FilterResult: e.filterResult, Namespace: e.namespace, Name: e.name})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
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
