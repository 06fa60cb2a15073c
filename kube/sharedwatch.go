package kube

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/addonops/addon-operator/loader"
)

// watchKey is what makes the watches of two bindings one: the API server
// sends both the same objects (shell-operator shares informers by the same
// four).
type watchKey struct {
	gvr                          schema.GroupVersionResource
	namespace                    string // "" for all
	labelSelector, fieldSelector string
}

// sharedWatch is one reflector and one store for every member with the
// same watchKey. The store holds each object once: decoded while a member
// keeps whole objects, else as its JSON, which is smaller and is what a
// member that joins later runs its jqFilter on. Members keep only their
// filter results, in the records.
type sharedWatch struct {
	key    watchKey
	kind   string
	logger *slog.Logger
	loop   *reflectorLoop // set by run
	refs   int            // guarded by Watcher.mu: the holders

	// deliver is held while the store changes and the members are told,
	// so a member that joins sees the store once and then every later
	// change, in order; only its holder writes the store, and may read it
	// without mu. mu guards the store against readers: it is held only to
	// write, never while filters run or members are told, so a handler
	// may read snapshots and a slow jqFilter stalls no reader.
	deliver sync.Mutex
	mu      sync.Mutex
	records map[string]*record // by namespace/name
	members []*member          // by slot; nil: a free slot
	form    bodyForm           // how records keep their objects
	synced  bool
	refusal error // the API server refused the first list
	lastErr string
}

var _ cache.ReflectorStore = (*sharedWatch)(nil)

func newSharedWatch(key watchKey, kind string, logger *slog.Logger) *sharedWatch {
	return &sharedWatch{
		key: key, kind: kind, records: map[string]*record{},
		logger: logger.With("kind", kind, "namespace", key.namespace, "labelSelector", key.labelSelector, "fieldSelector", key.fieldSelector),
	}
}

// run starts the reflector that lists and watches into the store; it
// stops when ctx ends or cancel is called.
func (sw *sharedWatch) run(ctx context.Context, client dynamic.Interface) {
	var ri dynamic.ResourceInterface = client.Resource(sw.key.gvr)
	if sw.key.namespace != "" {
		ri = client.Resource(sw.key.gvr).Namespace(sw.key.namespace)
	}
	tweak := func(o *metav1.ListOptions) {
		o.LabelSelector, o.FieldSelector = sw.key.labelSelector, sw.key.fieldSelector
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(&o)
			list, err := ri.List(ctx, o)
			sw.noteError(ctx, err)
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			w, err := ri.Watch(ctx, o)
			sw.noteError(ctx, err)
			return w, err
		},
	}
	name := fmt.Sprintf("%s in %q (labels %q, fields %q)", sw.kind, sw.key.namespace, sw.key.labelSelector, sw.key.fieldSelector)
	r := cache.NewReflectorWithOptions(lw, &unstructured.Unstructured{}, sw, cache.ReflectorOptions{Name: name})
	loop := &reflectorLoop{done: make(chan struct{}), logger: sw.logger}
	ctx, loop.cancel = context.WithCancel(ctx)
	sw.loop = loop
	go func() {
		defer close(loop.done)
		r.RunWithContext(ctx)
	}()
	sw.logger.Debug("watch opened")
}

// reflectorLoop is the goroutine of a shared watch's reflector.
type reflectorLoop struct {
	cancel context.CancelFunc
	done   chan struct{} // the reflector returned
	logger *slog.Logger
}

// stop stops the reflector and waits for it.
func (l *reflectorLoop) stop() {
	l.cancel()
	<-l.done
	l.logger.Debug("watch closed")
}

// noteError logs a list or watch error once and tells the members. Before
// the first list completed, an error the API server answered with (not a
// broken connection, which the reflector outlasts) is the members' answer
// to their wait.
func (sw *sharedWatch) noteError(ctx context.Context, err error) {
	if err == nil || ctx.Err() != nil {
		return
	}
	sw.mu.Lock()
	repeated := sw.lastErr == err.Error()
	sw.lastErr = err.Error()
	refusal := !sw.synced && refused(err)
	if refusal {
		sw.refusal = err
	}
	for _, mb := range sw.members {
		if mb == nil {
			continue
		}
		if refusal {
			trySend(mb.ready, err)
		}
		mb.onError(err)
	}
	sw.mu.Unlock()
	if !repeated {
		sw.logger.Warn("list/watch failed; retrying with backoff", "err", err)
	}
}

func refused(err error) bool {
	return apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) ||
		apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsMethodNotSupported(err)
}

func trySend(ch chan error, err error) {
	select {
	case ch <- err:
	default:
	}
}

// join adds mb. Once the store has the first list, mb is told every object
// it sees as Added and is ready; before, the first list does that.
func (sw *sharedWatch) join(mb *member) {
	sw.deliver.Lock()
	defer sw.deliver.Unlock()
	sw.mu.Lock()
	mb.slot = slices.Index(sw.members, nil)
	if mb.slot < 0 {
		mb.slot = len(sw.members)
		sw.members = append(sw.members, mb)
	} else {
		sw.members[mb.slot] = mb
	}
	sw.form.join(mb, sw.records)
	if !sw.synced {
		if sw.refusal != nil {
			trySend(mb.ready, sw.refusal)
		}
		sw.mu.Unlock()
		return
	}
	recs := sortedRecords(sw.records)
	sw.mu.Unlock()
	// the filters run without mu (as in put): only deliver's holder writes
	// the store
	var notes []note
	for _, rec := range recs {
		if !mb.sees(rec.name) {
			continue
		}
		var in jqInput
		if mb.jq != nil {
			in = inputOf(rec.body)
		}
		notes = append(notes, note{mb, change{typ: loader.EventAdded, rec: rec, result: mb.result(nil, rec.object, in)}})
	}
	sw.mu.Lock()
	for _, n := range notes {
		n.c.rec.set(mb.slot, n.c.result)
	}
	mb.count += len(notes)
	sw.mu.Unlock()
	tell(notes)
	trySend(mb.ready, nil)
}

// leave removes mb; with report, the objects it saw are told to it as
// Deleted first (a namespace that left a binding's selection).
func (sw *sharedWatch) leave(mb *member, report bool) {
	sw.deliver.Lock()
	defer sw.deliver.Unlock()
	sw.mu.Lock()
	var notes []note
	if report {
		for _, rec := range sortedRecords(sw.records) {
			if res, ok := rec.get(mb.slot); ok {
				notes = append(notes, note{mb, change{typ: loader.EventDeleted, rec: rec, result: res}})
			}
		}
	}
	for _, rec := range sw.records {
		rec.drop(mb.slot)
	}
	sw.members[mb.slot] = nil
	for len(sw.members) > 0 && sw.members[len(sw.members)-1] == nil {
		sw.members = sw.members[:len(sw.members)-1]
	}
	sw.form.leave(mb, sw.records)
	mb.count = 0
	sw.mu.Unlock()
	tell(notes)
	trySend(mb.ready, nil) // no one waits for a watch it left
}

// snapshot lists what mb sees, unsorted.
func (sw *sharedWatch) snapshot(mb *member) []ObjectEvent {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	out := make([]ObjectEvent, 0, mb.count)
	for _, rec := range sw.records {
		res, ok := rec.get(mb.slot)
		if !ok {
			continue
		}
		ev := ObjectEvent{FilterResult: res, Namespace: rec.namespace, Name: rec.name}
		if mb.keep {
			ev.Object = rec.object()
		}
		out = append(out, ev)
	}
	return out
}

func (sw *sharedWatch) count(mb *member) int {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return mb.count
}
