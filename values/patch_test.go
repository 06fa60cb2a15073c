package values

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestPatchScope(t *testing.T) {
	t.Parallel()
	store, _, err := NewStore(Source{Modules: []ModuleSource{{Name: "one"}, {Name: "two"}}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, module, patch, wantErr string
	}{
		{name: "module hook own section", module: "one", patch: `[{"op":"add","path":"/one/a","value":1}]`},
		{name: "module hook touches global", module: "one", patch: `[{"op":"add","path":"/global/a","value":1}]`, wantErr: `may change only /one`},
		{name: "module hook touches other module", module: "one", patch: `[{"op":"add","path":"/two/a","value":1}]`, wantErr: `may change only /one`},
		{name: "module hook copies from other module", module: "one", patch: `[{"op":"copy","from":"/two/a","path":"/one/a"}]`, wantErr: `"/two/a"`},
		{name: "global hook global", patch: `[{"op":"add","path":"/global/a","value":1}]`},
		{name: "global hook flag", patch: `[{"op":"add","path":"/twoEnabled","value":true}]`},
		{name: "global hook module section", patch: `[{"op":"add","path":"/two/a","value":1}]`, wantErr: `a global hook may change only /global and *Enabled flags`},
		{name: "replace of a missing path", module: "one", patch: `[{"op":"replace","path":"/one/missing/deep","value":1}]`, wantErr: "hook h: values patch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePatch("patch", []byte(tt.patch))
			if err != nil {
				t.Fatal(err)
			}
			key := ""
			if tt.module != "" {
				key, _ = ModuleKey(tt.module)
			}
			_, err = store.ApplyValuesPatch("h", key, p)
			if tt.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if tt.wantErr != "" && strings.Contains(tt.wantErr, "may change") {
				var se *ScopeError
				if !errors.As(err, &se) || se.Hook != "h" {
					t.Fatalf("not a ScopeError naming the hook: %v", err)
				}
			}
		})
	}
	if !store.Enabled("two") {
		t.Fatal("a global hook's flag patch did not enable the module")
	}
}

func TestParsePatchForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		n        int
		wantErr  bool
	}{
		{name: "array", in: `[{"op":"add","path":"/a","value":1},{"op":"remove","path":"/b"}]`, n: 2},
		{name: "object stream", in: "{\"op\":\"add\",\"path\":\"/a\",\"value\":1}\n{\"op\":\"remove\",\"path\":\"/b\"}\n", n: 2},
		{name: "empty file", in: "", n: 0},
		{name: "bad json", in: `[{"op":`, wantErr: true},
		{name: "unknown op", in: `[{"op":"merge","path":"/a"}]`, wantErr: true},
		{name: "move without from", in: `[{"op":"move","path":"/a"}]`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePatch("f", []byte(tt.in))
			if (err != nil) != tt.wantErr || len(p) != tt.n {
				t.Fatalf("ParsePatch = %v, %v", p, err)
			}
		})
	}
}

func TestConfigPatchFlagsAndNewSection(t *testing.T) {
	t.Parallel()
	p := Patch{{Op: "add", Path: "/oneEnabled", Value: false}, {Op: "add", Path: "/global/x", Value: "y"}}
	out, err := ApplyConfigPatch("g", "", map[string]string{"one": "a: 1 # comment\n"}, p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"one": "a: 1 # comment\n", "oneEnabled": "false\n", "global": "x: \"y\"\n"}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("out = %q", out)
	}
}
