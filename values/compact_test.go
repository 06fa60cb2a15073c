package values

import (
	"encoding/json"
	"fmt"
	"testing"
)

func op(kind, path string, rest ...any) Operation {
	o := Operation{Op: kind, Path: path}
	switch kind {
	case "copy", "move":
		o.From = rest[0].(string)
	case "add", "replace", "test":
		o.Value = rest[0]
	}
	return o
}

// equivalentOn checks compaction's promise on one document: where the
// original patch applies, the compacted one applies and gives the same
// document.
func equivalentOn(doc map[string]any, orig, compacted Patch) error {
	want, err := orig.apply(deepCopy(doc).(map[string]any))
	if err != nil {
		return nil // the promise covers only documents where the original applies
	}
	got, err := compacted.apply(deepCopy(doc).(map[string]any))
	if err != nil {
		return fmt.Errorf("compacted patch fails where the original applies: %w", err)
	}
	if !equal(want, got) {
		w, _ := json.Marshal(want)
		g, _ := json.Marshal(got)
		return fmt.Errorf("compacted patch gives %s, the original %s", g, w)
	}
	return nil
}

var compactDocs = []string{
	`{}`, `{"x":0}`, `{"x":{"y":1},"y":2}`, `{"a":{}}`, `{"a":{"b":{"c":0}}}`, `{"z":1,"x":[1]}`,
}

func TestCompactKeepsResults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		patch   Patch
		wantLen int
	}{
		{name: "add, copy it away, remove (the bug report)", wantLen: 3,
			patch: Patch{op("add", "/x", 1.0), op("copy", "/y", "/x"), op("remove", "/x")}},
		{name: "add then replace", wantLen: 1,
			patch: Patch{op("add", "/x", 1.0), op("replace", "/x", 2.0)}},
		{name: "add, move it away, add again", wantLen: 3,
			patch: Patch{op("add", "/x", map[string]any{}), op("move", "/y", "/x"), op("add", "/x", 1.0)}},
		{name: "deep add then remove keeps the created parents", wantLen: 2,
			patch: Patch{op("add", "/a/b/c", 1.0), op("remove", "/a/b/c")}},
		{name: "deep add, copy into its parent, add over it", wantLen: 3,
			patch: Patch{op("add", "/a/b/c", 1.0), op("copy", "/a/b/d", "/z"), op("add", "/a/b/c", 2.0)}},
		{name: "copy out of a subtree, then overwrite the subtree", wantLen: 3,
			patch: Patch{op("add", "/x/y", 1.0), op("copy", "/z", "/x"), op("add", "/x", 2.0)}},
		{name: "test between writes", wantLen: 1,
			patch: Patch{op("replace", "/x", 1.0), op("test", "/x", 1.0), op("replace", "/x", 2.0)}},
		{name: "repeated adds", wantLen: 1,
			patch: Patch{op("add", "/x", 1.0), op("add", "/x", 2.0), op("add", "/x", 3.0)}},
		{name: "children then parent", wantLen: 1,
			patch: Patch{op("add", "/x/y", 1.0), op("remove", "/x/z"), op("add", "/x", 2.0)}},
		{name: "independent keys stay bounded", wantLen: 2,
			patch: Patch{op("add", "/p", 1.0), op("add", "/q", 1.0), op("add", "/p", 2.0), op("add", "/q", 2.0)}},
		{name: "add and remove of a top-level key", wantLen: 1,
			patch: Patch{op("add", "/x", 1.0), op("remove", "/x")}},
		{name: "remove, add, replace make one add", wantLen: 1,
			patch: Patch{op("remove", "/x"), op("add", "/x", 1.0), op("replace", "/x", 2.0)}},
		{name: "remove below a replace", wantLen: 1,
			patch: Patch{op("remove", "/x/y"), op("replace", "/x", 2.0)}},
		{name: "deep add below a replace is kept", wantLen: 2,
			patch: Patch{op("add", "/a/b/c", 1.0), op("replace", "/a", 2.0)}},
		{name: "array appends are kept", wantLen: 2,
			patch: Patch{op("add", "/x/-", 1.0), op("add", "/x/-", 2.0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := compact(tt.patch)
			for _, d := range compactDocs {
				var doc map[string]any
				if err := json.Unmarshal([]byte(d), &doc); err != nil {
					t.Fatal(err)
				}
				if err := equivalentOn(doc, tt.patch, got); err != nil {
					t.Errorf("on %s: %v (compacted: %v)", d, err, got)
				}
			}
			if len(got) != tt.wantLen {
				t.Errorf("compacted to %d ops, want %d: %v", len(got), tt.wantLen, got)
			}
		})
	}
}
