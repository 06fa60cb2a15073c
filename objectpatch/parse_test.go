package objectpatch

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	type want struct {
		op, kind, ns, name, sub string
		patch                   string // Patch, as JSON
		ignoreMissing, ignoreHE bool
	}
	cases := []struct {
		file string
		want []want
		err  string // a substring of the error
	}{
		{file: "jsonlines.txt", want: []want{
			{op: CreateOrUpdate, kind: "ConfigMap", ns: "ns", name: "a"},
			{op: Create, kind: "ConfigMap", ns: "ns", name: "b"},
			{op: CreateIfNotExists, kind: "ConfigMap", name: "c"},
			{op: Delete, kind: "ConfigMap", ns: "ns", name: "a"},
			{op: DeleteInBackground, kind: "ConfigMap", ns: "ns", name: "a"},
			{op: DeleteNonCascading, kind: "ConfigMap", ns: "ns", name: "a"},
			{op: MergePatch, kind: "ConfigMap", ns: "ns", name: "b", patch: `{"data":{"x":"1"}}`},
			{op: MergePatch, kind: "ConfigMap", ns: "ns", name: "b", patch: `{"data":{"w":"2"}}`, ignoreMissing: true},
			{op: JSONPatch, kind: "ConfigMap", ns: "ns", name: "b", patch: `[{"op":"add","path":"/data/z","value":"3"}]`},
			{op: JSONPatch, kind: "ConfigMap", ns: "ns", name: "b", patch: `[{"op":"remove","path":"/data/z"}]`},
			{op: JQPatch, kind: "Thing", ns: "ns", name: "t", sub: "status", ignoreHE: true},
		}},
		{file: "yamldocs.txt", want: []want{
			{op: CreateOrUpdate, kind: "ConfigMap", ns: "ns", name: "a"},
			{op: MergePatch, kind: "ConfigMap", ns: "ns", name: "a", patch: `{"data":{"x":"1"}}`},
			{op: JQPatch, kind: "ConfigMap", ns: "ns", name: "a"},
		}},
		{file: "empty.txt"},
		{file: "unknown-op.txt", err: `operation 2: unknown operation "Patch"`},
		{file: "no-mergepatch.txt", err: "operation 1: MergePatch ConfigMap/a: mergePatch: missing"},
		{file: "jsonpatch-object.txt", err: "operation 1: JSONPatch ConfigMap/a: jsonPatch: want a non-empty array"},
		{file: "delete-no-name.txt", err: "operation 1: Delete: kind and name are required"},
		{file: "create-no-name.txt", err: "operation 1: Create: object: metadata.name is required"},
		{file: "bad-jq.txt", err: "operation 1: JQPatch ConfigMap/a: jqFilter:"},
		{file: "unknown-field.txt", err: `operation 1: json: unknown field "namespaces"`},
		{file: "bad-yaml.txt", err: "document 1:"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			ops, err := Parse(b, MaxOps)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want it to contain %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ops) != len(c.want) {
				t.Fatalf("%d operations, want %d: %v", len(ops), len(c.want), ops)
			}
			for i, w := range c.want {
				o := ops[i]
				got := want{o.Operation, o.Kind, o.Namespace, o.Name, o.Subresource, string(o.Patch), o.IgnoreMissingObject, o.IgnoreHookError}
				if got != w || o.Index != i+1 {
					t.Fatalf("operation %d: %+v (index %d), want %+v", i+1, got, o.Index, w)
				}
				if strings.HasPrefix(o.Operation, "Create") && o.Object == nil {
					t.Fatalf("operation %d: no object", i+1)
				}
				if o.Operation == JQPatch && o.JQ == nil {
					t.Fatalf("operation %d: no compiled filter", i+1)
				}
			}
		})
	}
}

// The cap holds for both forms, and a file of exactly the cap passes.
func TestParseCap(t *testing.T) {
	line := `{"operation":"Delete","kind":"ConfigMap","name":"a"}` + "\n"
	doc := "---\noperation: Delete\nkind: ConfigMap\nname: a\n"
	for _, unit := range []string{line, doc} {
		if ops, err := Parse(bytes.Repeat([]byte(unit), 3), 3); err != nil || len(ops) != 3 {
			t.Fatalf("at the cap: %d, %v", len(ops), err)
		}
		if _, err := Parse(bytes.Repeat([]byte(unit), 4), 3); err == nil || !strings.Contains(err.Error(), "too many operations: more than 3") {
			t.Fatalf("over the cap: %v", err)
		}
	}
}

func TestOnHookFailure(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "jsonlines.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ops, err := Parse(b, MaxOps)
	if err != nil {
		t.Fatal(err)
	}
	got := OnHookFailure(ops)
	if len(got) != 1 || got[0].Index != 11 {
		t.Fatalf("OnHookFailure: %v, want operation 11 only", got)
	}
	if s := fmt.Sprint(got[0]); s != "operation 11 (JQPatch Thing ns/t, subresource status)" {
		t.Fatalf("String: %q", s)
	}
}

// What a hostile file could use to exhaust the operator is refused while
// parsing: a filter deep enough to overflow gojq's compiler, YAML aliases
// that expand a small document without bound, and an object without a name,
// which a retry would create again.
func TestParseBounds(t *testing.T) {
	deep := strings.Repeat(".[", 20000) + "." + strings.Repeat("]", 20000)
	bomb := "operation: Create\nobject:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: x}\n  data:\n    a: &a \"" + strings.Repeat("x", 1000) + "\"\n    b: *a\n"
	for _, tc := range []struct{ name, in, want string }{
		{"deep jqFilter", `{"operation":"JQPatch","kind":"ConfigMap","name":"x","jqFilter":"` + deep + `"}`, "jqFilter: 60001 bytes, more than 16384"},
		{"YAML alias", bomb, "YAML anchors and aliases are not allowed"},
		{"YAML alias in a string", `{"operation":"Create","object":"a: &a [1]\nb: *a\n"}`, "YAML anchors and aliases are not allowed"},
		{"generateName only", `{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"x-"}}}`, "metadata.name is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse([]byte(tc.in), MaxOps); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
