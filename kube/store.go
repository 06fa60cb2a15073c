package kube

import (
	"encoding/json"
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/addonops/addon-operator/loader"
)

// Add, Update, Delete and Replace are the reflector's calls, one at a time.

func (sw *sharedWatch) Add(obj any) error    { return sw.observe(loader.EventAdded, obj) }
func (sw *sharedWatch) Update(obj any) error { return sw.observe(loader.EventModified, obj) }
func (sw *sharedWatch) Delete(obj any) error { return sw.observe(loader.EventDeleted, obj) }
func (sw *sharedWatch) Resync() error        { return nil }

func (sw *sharedWatch) observe(typ string, obj any) error {
	u := unwrap(obj)
	if u == nil {
		return nil
	}
	sw.deliver.Lock()
	defer sw.deliver.Unlock()
	var notes []note
	if typ == loader.EventDeleted {
		notes = sw.remove(notes, u)
	} else {
		notes = sw.put(notes, typ, u)
	}
	tell(notes)
	return nil
}

// Replace handles a (re-)list: the members are told what changed since
// the last one (on the first list, everything as added: a member whose
// monitor is not synced yet takes it as its initial objects), objects that
// are gone last, by name.
func (sw *sharedWatch) Replace(list []any, _ string) error {
	sw.deliver.Lock()
	defer sw.deliver.Unlock()
	listed := make(map[string]bool, len(list))
	var notes []note
	for _, obj := range list {
		if u := unwrap(obj); u != nil {
			listed[u.GetNamespace()+"/"+u.GetName()] = true
			notes = sw.put(notes[:0], loader.EventAdded, u)
			tell(notes)
		}
	}
	sw.mu.Lock()
	notes = notes[:0]
	for _, rec := range sortedRecords(sw.records) {
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
				notes = append(notes, note{mb, change{typ: loader.EventDeleted, rec: rec, result: res}})
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

// put records an added or modified object and notes it for the members
// that see it, unless its resource version did not change (a re-list). An
// update whose filter result did not change is not noted. Under deliver;
// the filters run before mu is taken (only deliver's holder writes the
// store, so it reads it unlocked), so a slow jqFilter does not hold up
// snapshots, counts or /status (docs/operator.md, "Kubernetes bindings").
func (sw *sharedWatch) put(notes []note, typ string, u *unstructured.Unstructured) []note {
	key := u.GetNamespace() + "/" + u.GetName()
	prev := sw.records[key]
	if prev != nil && prev.resourceVersion == u.GetResourceVersion() {
		return notes
	}
	body, in := sw.form.encode(u.Object)
	rec := newRecord(key, u.GetResourceVersion(), body, len(sw.members))
	results := make([]any, len(sw.members))
	for _, mb := range sw.members {
		if mb != nil && mb.sees(rec.name) {
			results[mb.slot] = mb.result(u.Object, nil, in)
		}
	}
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.records[key] = rec
	for _, mb := range sw.members {
		if mb == nil || !mb.sees(rec.name) {
			continue
		}
		res := results[mb.slot]
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
		case t == loader.EventAdded:
			t = loader.EventModified // seen again after a re-list
		}
		if t == loader.EventModified && seen && mb.filters() && reflect.DeepEqual(old, res) {
			continue // the part the hook filters on did not change
		}
		notes = append(notes, note{mb, change{typ: t, rec: rec, object: u.Object, result: res}})
	}
	return notes
}

// remove drops a deleted object and notes it for the members that saw it.
// Under deliver; the filters run before mu is taken, as in put.
func (sw *sharedWatch) remove(notes []note, u *unstructured.Unstructured) []note {
	key := u.GetNamespace() + "/" + u.GetName()
	prev := sw.records[key]
	if prev == nil {
		return notes
	}
	var in jqInput
	if sw.form.filters > 0 {
		_, in = sw.form.encode(u.Object)
	}
	results := make([]any, len(sw.members))
	for _, mb := range sw.members {
		if mb == nil {
			continue
		}
		if _, ok := prev.get(mb.slot); ok {
			results[mb.slot] = mb.result(u.Object, nil, in)
		}
	}
	sw.mu.Lock()
	defer sw.mu.Unlock()
	delete(sw.records, key)
	for _, mb := range sw.members {
		if mb == nil {
			continue
		}
		if _, ok := prev.get(mb.slot); ok {
			mb.count--
			notes = append(notes, note{mb, change{typ: loader.EventDeleted, rec: prev, object: u.Object, result: results[mb.slot]}})
		}
	}
	return notes
}

// bodyForm says how a shared watch's records keep their objects: decoded
// while a member keeps whole objects, else as JSON, smaller, and what a
// member with a jqFilter that joins later reads. It counts those members.
// Changed under the watch's deliver and mu, read under deliver.
type bodyForm struct {
	keepers int // members that keep whole objects
	filters int // members with a jqFilter
}

// join counts mb; the first member that keeps objects decodes them.
func (f *bodyForm) join(mb *member, records map[string]*record) {
	if mb.keep {
		if f.keepers == 0 {
			decodeAll(records)
		}
		f.keepers++
	}
	if mb.jq != nil {
		f.filters++
	}
}

// leave uncounts mb; when no member keeps objects any more, they are
// encoded.
func (f *bodyForm) leave(mb *member, records map[string]*record) {
	if mb.keep {
		f.keepers--
		if f.keepers == 0 {
			encodeAll(records)
		}
	}
	if mb.jq != nil {
		f.filters--
	}
}

// encode is what the store keeps of obj and the filters' input.
func (f *bodyForm) encode(obj map[string]any) (body any, in jqInput) {
	if f.keepers > 0 && f.filters == 0 {
		return obj, in
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return obj, jqInput{err: err}
	}
	body = obj
	if f.keepers == 0 {
		body = b
	}
	if f.filters > 0 {
		in = plainJSON(b)
	}
	return body, in
}

// decodeAll turns the records' JSON into objects: a member keeps them now.
func decodeAll(records map[string]*record) {
	for _, rec := range records {
		if b, ok := rec.body.([]byte); ok {
			if obj, err := decodeObject(b); err == nil {
				rec.body = obj
			}
		}
	}
}

// encodeAll turns the records' objects into JSON: no member keeps them.
func encodeAll(records map[string]*record) {
	for _, rec := range records {
		if obj, ok := rec.body.(map[string]any); ok {
			if b, err := json.Marshal(obj); err == nil {
				rec.body = b
			}
		}
	}
}

// sortedRecords lists the records by namespace and name.
func sortedRecords(records map[string]*record) []*record {
	recs := make([]*record, 0, len(records))
	for _, rec := range records {
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
