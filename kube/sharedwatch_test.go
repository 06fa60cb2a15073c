package kube

import (
	"log/slog"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func testMember(t *testing.T, filter string, keep bool) *member {
	return &member{name: filter, jq: compile(t, filter), keep: keep, on: func(change) {}, onError: func(error) {}, ready: make(chan error, 1)}
}

// The store holds each object once: as JSON while no member keeps whole
// objects, decoded (the one map every keeping member's snapshot shares)
// while one does; members with equal filter results share the value.
func TestSharedStoreHoldsObjectsOnce(t *testing.T) {
	sw := newSharedWatch(watchKey{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}}, "ConfigMap", slog.Default())
	a, b := testMember(t, ".metadata.labels", false), testMember(t, ".metadata.labels", false)
	sw.join(a)
	sw.join(b)
	obj := benchObject(1, 1)
	obj.Object["spec"] = map[string]any{"replicas": int64(3)}
	if err := sw.Replace([]any{obj}, ""); err != nil {
		t.Fatal(err)
	}
	rec := sw.records["bench/cm-0001"]
	body := func() string { return reflect.TypeOf(rec.body).String() }
	if body() != "[]uint8" || len(rec.results) != 1 {
		t.Fatalf("filters only: body %s, %d results; want JSON and one shared result", body(), len(rec.results))
	}
	own := testMember(t, ".metadata.name", false)
	keep := testMember(t, ".metadata.labels", true)
	sw.join(own)
	sw.join(keep)
	if body() != "map[string]interface {}" || len(rec.results) != 2 {
		t.Fatalf("with a keeping member: body %s, %d results; want the object and two results", body(), len(rec.results))
	}
	snap := sw.snapshot(keep)
	if len(snap) != 1 || reflect.ValueOf(snap[0].Object).UnsafePointer() != reflect.ValueOf(rec.body).UnsafePointer() {
		t.Fatalf("the keeping member's snapshot is not the store's object: %+v", snap)
	}
	if r := snap[0].Object["spec"].(map[string]any)["replicas"]; r != int64(3) {
		t.Fatalf("decoded replicas = %#v, want int64(3) as the API server's objects have", r)
	}
	if s := sw.snapshot(a); len(s) != 1 || s[0].Object != nil || s[0].FilterResult == nil {
		t.Fatalf("a filtering member's snapshot = %+v", s)
	}
	sw.leave(keep, false)
	sw.leave(own, false)
	if body() != "[]uint8" || len(rec.results) != 1 {
		t.Fatalf("after they left: body %s, %d results; want JSON and one result", body(), len(rec.results))
	}
	sw.leave(a, false)
	if got, ok := rec.get(b.slot); !ok || got == nil {
		t.Fatalf("the result of the member that stays is gone: %v", got)
	}
}
