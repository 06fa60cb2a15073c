package kube

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Watcher creates monitors: it resolves kinds through discovery (a kind
// installed later, such as a new CRD, is found by refreshing the cache).
// Monitors with the same kind, namespace and selectors share one watch and
// one store, so a hundred bindings on the ConfigMaps of one namespace cost
// the API server one watch and the operator one copy of each object.
type Watcher struct {
	client dynamic.Interface
	mapper meta.RESTMapper
	logger *slog.Logger
	seq    atomic.Int64 // names monitors without a name

	mu      sync.Mutex
	watches map[watchKey]*sharedWatch
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
	return &Watcher{
		client: client, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), logger: logger,
		watches: map[watchKey]*sharedWatch{},
	}, nil
}

// watch returns the shared watch for key, starting it when none runs. The
// caller joins it, and releases it when done.
func (w *Watcher) watch(ctx context.Context, key watchKey, kind string) *sharedWatch {
	w.mu.Lock()
	defer w.mu.Unlock()
	sw := w.watches[key]
	if sw == nil {
		sw = newSharedWatch(key, kind, w.logger)
		// the watch outlives the monitor that opens it: it stops when the
		// last one releases it
		sw.run(context.WithoutCancel(ctx), w.client)
		w.watches[key] = sw
	}
	sw.refs++
	return sw
}

// release stops the watch when its last holder releases it.
func (w *Watcher) release(sw *sharedWatch) {
	w.mu.Lock()
	sw.refs--
	last := sw.refs == 0
	if last {
		delete(w.watches, sw.key)
	}
	w.mu.Unlock()
	if last {
		sw.loop.stop()
	}
}

// Watches lists the open shared watches, by resource, namespace and
// selectors.
func (w *Watcher) Watches() []WatchInfo {
	w.mu.Lock()
	sws := make([]*sharedWatch, 0, len(w.watches))
	for _, sw := range w.watches {
		sws = append(sws, sw)
	}
	w.mu.Unlock()
	out := make([]WatchInfo, 0, len(sws))
	for _, sw := range sws {
		out = append(out, sw.info())
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		for _, c := range [][2]string{{a.APIVersion, b.APIVersion}, {a.Resource, b.Resource}, {a.Namespace, b.Namespace}, {a.LabelSelector, b.LabelSelector}} {
			if c[0] != c[1] {
				return c[0] < c[1]
			}
		}
		return a.FieldSelector < b.FieldSelector
	})
	return out
}

// WatchInfo describes one open shared watch (for /status).
type WatchInfo struct {
	// APIVersion and Resource are what is watched ("v1", "configmaps").
	APIVersion string `json:"apiVersion"`
	Resource   string `json:"resource"`
	Kind       string `json:"kind"`
	// Namespace is "" for all namespaces (or a cluster-scoped kind).
	Namespace     string `json:"namespace,omitempty"`
	LabelSelector string `json:"labelSelector,omitempty"`
	FieldSelector string `json:"fieldSelector,omitempty"`
	// Objects is how many objects the store holds.
	Objects int `json:"objects"`
	// Synced: the first list completed.
	Synced bool `json:"synced"`
	// LastError is the last list or watch error (retried with backoff).
	LastError string `json:"lastError,omitempty"`
	// Bindings are the names of the monitors that use the watch (a
	// monitor with a namespace label selector uses a watch of namespaces
	// too), sorted.
	Bindings []string `json:"bindings"`
}

func (sw *sharedWatch) info() WatchInfo {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	wi := WatchInfo{
		APIVersion: sw.key.gvr.GroupVersion().String(), Resource: sw.key.gvr.Resource, Kind: sw.kind,
		Namespace: sw.key.namespace, LabelSelector: sw.key.labelSelector, FieldSelector: sw.key.fieldSelector,
		Objects: len(sw.records), Synced: sw.synced, LastError: sw.lastErr, Bindings: []string{},
	}
	for _, mb := range sw.members {
		if mb != nil {
			wi.Bindings = append(wi.Bindings, mb.name)
		}
	}
	slices.Sort(wi.Bindings)
	return wi
}

// Get reads one object from the API server itself, not from a shared
// watch: what a caller that must see its own writes reads (a health wait
// right after the module's Helm upgrade, before the watch has told it).
// A missing object is (nil, nil).
func (w *Watcher) Get(ctx context.Context, ref ObjectRef) (map[string]any, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("apiVersion %q: %w", ref.APIVersion, err)
	}
	mapping, err := resolveKind(w.mapper, gv, ref.Kind)
	if err != nil {
		return nil, err
	}
	res := w.client.Resource(mapping.Resource)
	var obj *unstructured.Unstructured
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		obj, err = res.Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	} else {
		obj, err = res.Get(ctx, ref.Name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj.Object, nil
}
