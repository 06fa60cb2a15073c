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

	"github.com/itchyny/gojq"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
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
	cancel context.CancelFunc
	done   chan struct{} // the reflector returned
	refs   int           // guarded by Watcher.mu: the holders

	// deliver is held while the store changes and the members are told,
	// so a member that joins sees the store once and then every later
	// change, in order. mu guards the store itself and is not held while
	// members are told, so a handler may read snapshots.
	deliver sync.Mutex
	mu      sync.Mutex
	records map[string]*record // by namespace/name
	members []*member          // by slot; nil: a free slot
	keepers int                // members that keep whole objects
	filters int                // members with a jqFilter
	synced  bool
	refusal error // the API server refused the first list
	lastErr string
}

var _ cache.ReflectorStore = (*sharedWatch)(nil)

// record is one object of a shared store.
type record struct {
	key, namespace, name, resourceVersion string // namespace and name are parts of key
	// body is the object (map[string]any) while a member keeps whole
	// objects, else its JSON ([]byte).
	body any
	// results are the distinct filter results of the members that see the
	// object: seen[slot] is 1 + the index of the member's result, 0 when it
	// does not see the object. Bindings whose filters agree share a value.
	results []any
	seen    []uint32
}

func newRecord(key, resourceVersion string, body any, slots int) *record {
	ns, name, _ := strings.Cut(key, "/")
	return &record{key: key, namespace: ns, name: name, resourceVersion: resourceVersion, body: body, seen: make([]uint32, slots)}
}

func (r *record) get(slot int) (any, bool) {
	if slot >= len(r.seen) || r.seen[slot] == 0 {
		return nil, false
	}
	return r.results[r.seen[slot]-1], true
}

func (r *record) set(slot int, v any) {
	if slot >= len(r.seen) {
		r.seen = append(r.seen, make([]uint32, slot+1-len(r.seen))...)
	}
	r.seen[slot] = uint32(r.intern(v) + 1)
}

// intern returns the index of a result equal to v, adding v when there is
// none. It compares with the first and the last result only: that finds
// the common case (bindings with the same filter) without comparing every
// pair when filters differ.
func (r *record) intern(v any) int {
	n := len(r.results)
	if n > 0 && reflect.DeepEqual(r.results[0], v) {
		return 0
	}
	if n > 1 && reflect.DeepEqual(r.results[n-1], v) {
		return n - 1
	}
	r.results = append(r.results, v)
	return n
}

// drop forgets the result of slot, and the value when no one else has it.
func (r *record) drop(slot int) {
	if slot >= len(r.seen) || r.seen[slot] == 0 {
		return
	}
	idx := r.seen[slot]
	r.seen[slot] = 0
	if slices.Contains(r.seen, idx) {
		return
	}
	r.results = slices.Delete(r.results, int(idx-1), int(idx))
	for i, s := range r.seen {
		if s > idx {
			r.seen[i]--
		}
	}
}

// object is the record's object, decoded as the API server's objects are
// (integers as int64) when the store holds its JSON.
func (r *record) object() map[string]any {
	switch b := r.body.(type) {
	case map[string]any:
		return b
	case []byte:
		if obj, err := decodeObject(b); err == nil {
			return obj
		}
	}
	return nil
}

func decodeObject(b []byte) (map[string]any, error) {
	var obj map[string]any
	err := utiljson.Unmarshal(b, &obj)
	return obj, err
}

// member is one binding's part of a shared watch (or one namespace label
// selector's part of a watch of namespaces).
type member struct {
	name  string
	jq    *gojq.Code
	keep  bool     // keeps whole objects: its snapshot has them
	names []string // only objects of these names (empty: all)
	// on is told each change of what the member sees, in order; objects
	// it starts seeing come as Added, objects it stops seeing as Deleted.
	on      func(change)
	onError func(error)
	// ready gets nil at the member's first list, or the API server's
	// refusal of it.
	ready chan error
	slot  int
	count int // objects it sees; guarded by the watch's lock
}

func (mb *member) sees(name string) bool {
	return len(mb.names) == 0 || slices.Contains(mb.names, name)
}

// filter runs the member's jqFilter on in (nil without a filter).
func (mb *member) filter(in jqInput) any {
	if mb.jq == nil {
		return nil
	}
	err := in.err
	if err == nil {
		var r any
		if r, err = runJq(mb.jq, in.v); err == nil {
			return r
		}
	}
	return map[string]any{"error": err.Error()}
}

// jqInput is an object as plain JSON values for gojq, shared by the filters
// of every member.
type jqInput struct {
	v   any
	err error
}

// note is a change for one member, told once the store is unlocked.
type note struct {
	mb *member
	c  change
}

func tell(notes []note) {
	for _, n := range notes {
		n.mb.on(n.c)
	}
}

// change is what a member is told.
type change struct {
	typ string
	rec *record
	// object is the object as the API server sent it; nil when it comes
	// from the store (a member joining, a re-list that lost it).
	object map[string]any
	result any
}

func newSharedWatch(key watchKey, kind string, logger *slog.Logger) *sharedWatch {
	return &sharedWatch{
		key: key, kind: kind, done: make(chan struct{}), records: map[string]*record{},
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
	ctx, sw.cancel = context.WithCancel(ctx)
	go func() {
		defer close(sw.done)
		r.RunWithContext(ctx)
	}()
	sw.logger.Debug("watch opened")
}

// stop stops the reflector and waits for it.
func (sw *sharedWatch) stop() {
	sw.cancel()
	<-sw.done
	sw.logger.Debug("watch closed")
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
	if mb.keep {
		if sw.keepers == 0 {
			sw.decodeAll()
		}
		sw.keepers++
	}
	if mb.jq != nil {
		sw.filters++
	}
	if !sw.synced {
		if sw.refusal != nil {
			trySend(mb.ready, sw.refusal)
		}
		sw.mu.Unlock()
		return
	}
	var notes []note
	for _, rec := range sw.sorted() {
		if !mb.sees(rec.name) {
			continue
		}
		var in jqInput
		if mb.jq != nil {
			in = sw.inputOf(rec.body)
		}
		res := mb.filter(in)
		rec.set(mb.slot, res)
		mb.count++
		notes = append(notes, note{mb, change{typ: Added, rec: rec, result: res}})
	}
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
		for _, rec := range sw.sorted() {
			if res, ok := rec.get(mb.slot); ok {
				notes = append(notes, note{mb, change{typ: Deleted, rec: rec, result: res}})
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
	if mb.keep {
		sw.keepers--
		if sw.keepers == 0 {
			sw.encodeAll()
		}
	}
	if mb.jq != nil {
		sw.filters--
	}
	mb.count = 0
	sw.mu.Unlock()
	tell(notes)
	trySend(mb.ready, nil) // no one waits for a watch it left
}

// decodeAll turns the store's JSON into objects: a member keeps them now.
func (sw *sharedWatch) decodeAll() {
	for _, rec := range sw.records {
		if b, ok := rec.body.([]byte); ok {
			if obj, err := decodeObject(b); err == nil {
				rec.body = obj
			}
		}
	}
}

// encodeAll turns the store's objects into JSON: no member keeps them.
func (sw *sharedWatch) encodeAll() {
	for _, rec := range sw.records {
		if obj, ok := rec.body.(map[string]any); ok {
			if b, err := json.Marshal(obj); err == nil {
				rec.body = b
			}
		}
	}
}

// encode is what the store keeps of obj and the filters' input.
func (sw *sharedWatch) encode(obj map[string]any) (body any, in jqInput) {
	if sw.keepers > 0 && sw.filters == 0 {
		return obj, in
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return obj, jqInput{err: err}
	}
	body = obj
	if sw.keepers == 0 {
		body = b
	}
	if sw.filters > 0 {
		in = plainJSON(b)
	}
	return body, in
}

// inputOf is the filters' input from what the store keeps.
func (sw *sharedWatch) inputOf(body any) jqInput {
	b, ok := body.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return jqInput{err: err}
		}
	}
	return plainJSON(b)
}

// plainJSON decodes to the plain JSON values gojq takes (int64 in the API
// server's objects is not one).
func plainJSON(b []byte) jqInput {
	var v any
	err := json.Unmarshal(b, &v)
	return jqInput{v: v, err: err}
}

// sorted lists the records by namespace and name.
func (sw *sharedWatch) sorted() []*record {
	recs := make([]*record, 0, len(sw.records))
	for _, rec := range sw.records {
		recs = append(recs, rec)
	}
	sortRecords(recs)
	return recs
}

func sortRecords(recs []*record) {
	sort.Slice(recs, func(i, j int) bool {
		if recs[i].namespace != recs[j].namespace {
			return recs[i].namespace < recs[j].namespace
		}
		return recs[i].name < recs[j].name
	})
}

func unwrap(obj any) *unstructured.Unstructured {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	u, _ := obj.(*unstructured.Unstructured)
	return u
}

// put records an added or modified object and notes it for the members
// that see it, unless its resource version did not change (a re-list). An
// update whose filter result did not change is not noted.
func (sw *sharedWatch) put(notes []note, typ string, u *unstructured.Unstructured) []note {
	key := u.GetNamespace() + "/" + u.GetName()
	prev := sw.records[key]
	if prev != nil && prev.resourceVersion == u.GetResourceVersion() {
		return notes
	}
	body, in := sw.encode(u.Object)
	rec := newRecord(key, u.GetResourceVersion(), body, len(sw.members))
	sw.records[key] = rec
	for _, mb := range sw.members {
		if mb == nil || !mb.sees(rec.name) {
			continue
		}
		res := mb.filter(in)
		rec.set(mb.slot, res)
		var old any
		seen := false
		if prev != nil {
			old, seen = prev.get(mb.slot)
		}
		t := typ
		switch {
		case !seen:
			mb.count++
		case t == Added:
			t = Modified // seen again after a re-list
		}
		if t == Modified && seen && mb.jq != nil && reflect.DeepEqual(old, res) {
			continue // the part the hook filters on did not change
		}
		notes = append(notes, note{mb, change{typ: t, rec: rec, object: u.Object, result: res}})
	}
	return notes
}

// remove drops a deleted object and notes it for the members that saw it.
func (sw *sharedWatch) remove(notes []note, u *unstructured.Unstructured) []note {
	key := u.GetNamespace() + "/" + u.GetName()
	prev := sw.records[key]
	if prev == nil {
		return notes
	}
	delete(sw.records, key)
	var in jqInput
	if sw.filters > 0 {
		_, in = sw.encode(u.Object)
	}
	for _, mb := range sw.members {
		if mb == nil {
			continue
		}
		if _, ok := prev.get(mb.slot); ok {
			mb.count--
			notes = append(notes, note{mb, change{typ: Deleted, rec: prev, object: u.Object, result: mb.filter(in)}})
		}
	}
	return notes
}

// Add, Update, Delete and Replace are the reflector's calls, one at a time.

func (sw *sharedWatch) Add(obj any) error    { return sw.observe(Added, obj) }
func (sw *sharedWatch) Update(obj any) error { return sw.observe(Modified, obj) }
func (sw *sharedWatch) Delete(obj any) error { return sw.observe(Deleted, obj) }
func (sw *sharedWatch) Resync() error        { return nil }

func (sw *sharedWatch) observe(typ string, obj any) error {
	u := unwrap(obj)
	if u == nil {
		return nil
	}
	sw.deliver.Lock()
	defer sw.deliver.Unlock()
	sw.mu.Lock()
	var notes []note
	if typ == Deleted {
		notes = sw.remove(notes, u)
	} else {
		notes = sw.put(notes, typ, u)
	}
	sw.mu.Unlock()
	tell(notes)
	return nil
}

// Replace handles a (re-)list: the members are told what changed since
// the last one (nothing is reported of the first: their monitors are not
// synced yet), objects that are gone last, by name.
func (sw *sharedWatch) Replace(list []any, _ string) error {
	sw.deliver.Lock()
	defer sw.deliver.Unlock()
	listed := make(map[string]bool, len(list))
	var notes []note
	for _, obj := range list {
		if u := unwrap(obj); u != nil {
			listed[u.GetNamespace()+"/"+u.GetName()] = true
			sw.mu.Lock()
			notes = sw.put(notes[:0], Added, u)
			sw.mu.Unlock()
			tell(notes)
		}
	}
	sw.mu.Lock()
	notes = notes[:0]
	for _, rec := range sw.sorted() {
		if listed[rec.key] {
			continue
		}
		delete(sw.records, rec.key)
		for _, mb := range sw.members {
			if mb == nil {
				continue
			}
			if res, ok := rec.get(mb.slot); ok {
				mb.count--
				notes = append(notes, note{mb, change{typ: Deleted, rec: rec, result: res}})
			}
		}
	}
	sw.mu.Unlock()
	tell(notes)
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if !sw.synced {
		sw.synced = true
		for _, mb := range sw.members {
			if mb != nil {
				trySend(mb.ready, nil)
			}
		}
	}
	return nil
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
