package kube

import (
	"reflect"
	"slices"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

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
