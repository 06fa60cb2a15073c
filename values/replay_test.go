package values

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// readAll runs every read of a module's values and returns the first error.
func readAll(s *Store, key string) error {
	_, err1 := s.ModuleValues(key, []string{ModuleName(key)})
	_, err2 := s.HelmValues(key)
	_, err3 := s.GlobalValues()
	return errors.Join(err1, err2, err3, s.CheckHelmValues(key))
}

// opsOf renders dropped operations as "section hook op path" and checks
// that each says why.
func opsOf(t *testing.T, drops []DroppedOp) []string {
	t.Helper()
	var out []string
	for _, d := range drops {
		if d.Reason == "" {
			t.Errorf("%v: no reason", d)
		}
		out = append(out, strings.Join([]string{d.Section, d.Hook, d.Op, d.Path}, " "))
	}
	return out
}

// A stored patch whose paths a ConfigMap edit removed must not wedge reads;
// SetConfig drops what no longer applies and says so.
func TestStalePatchAfterConfigEdit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		cm, nextCM  string
		patch       Patch
		want        string   // the module's values after the edit
		wantDropped []string // op and path
	}{
		{name: "replace of a key the edit dropped", cm: "gamma: {b: 1, z: 1}", nextCM: "gamma: {z: 1}",
			patch: Patch{{Op: "replace", Path: "/one/gamma/b", Value: 2.0}}, want: `{"gamma":{"z":1}}`, wantDropped: []string{"replace /one/gamma/b"}},
		{name: "replace under a parent the edit dropped", cm: "gamma: {b: 1}", nextCM: "other: 1",
			patch: Patch{{Op: "replace", Path: "/one/gamma/b", Value: 2.0}}, want: `{"other":1}`, wantDropped: []string{"replace /one/gamma/b"}},
		{name: "copy from a dropped key", cm: "a: 1", nextCM: "c: 1",
			patch: Patch{{Op: "copy", From: "/one/a", Path: "/one/b"}}, want: `{"c":1}`, wantDropped: []string{"copy /one/b"}},
		{name: "move from a dropped key", cm: "a: 1", nextCM: "c: 1",
			patch: Patch{{Op: "move", From: "/one/a", Path: "/one/b"}}, want: `{"c":1}`, wantDropped: []string{"move /one/b"}},
		{name: "add under a parent that became a scalar", cm: "p: {}", nextCM: "p: 5",
			patch: Patch{{Op: "add", Path: "/one/p/q", Value: 1.0}}, want: `{"p":5}`, wantDropped: []string{"add /one/p/q"}},
		{name: "a test was checked when the hook ran", cm: "a: 1", nextCM: "a: 2",
			patch: Patch{{Op: "test", Path: "/one/a", Value: 1.0}, {Op: "add", Path: "/one/b", Value: 2.0}}, want: `{"a":2,"b":2}`},
		{name: "a remove of a gone key is still a no-op", cm: "a: 1\nb: 1", nextCM: "b: 2",
			patch: Patch{{Op: "remove", Path: "/one/a"}}, want: `{"b":2}`},
		{name: "later ops still apply", cm: "gamma: {b: 1}", nextCM: "gamma: {}", want: `{"gamma":{},"k":"v"}`,
			patch:       Patch{{Op: "replace", Path: "/one/gamma/b", Value: 2.0}, {Op: "add", Path: "/one/k", Value: "v"}},
			wantDropped: []string{"replace /one/gamma/b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, _, err := NewStore(Source{Modules: []ModuleSource{{Name: "one"}}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.SetConfig(map[string]string{"one": tt.cm}); err != nil {
				t.Fatal(err)
			}
			if _, err := store.ApplyValuesPatch("hooks/h", "one", tt.patch); err != nil {
				t.Fatal(err)
			}
			ch, err := store.SetConfig(map[string]string{"one": tt.nextCM})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, d := range tt.wantDropped {
				want = append(want, "one hooks/h "+d)
			}
			if got := opsOf(t, ch.Dropped); !reflect.DeepEqual(got, want) {
				t.Errorf("dropped = %q, want %q", got, want)
			}
			if err := readAll(store, "one"); err != nil {
				t.Fatalf("reads fail after the edit: %v", err)
			}
			hv, _ := store.HelmValues("one")
			assertJSON(t, hv["one"], tt.want)
			// the hook runs again and patches on top
			if _, err := store.ApplyValuesPatch("hooks/h", "one", Patch{{Op: "add", Path: "/one/again", Value: true}}); err != nil {
				t.Fatalf("the next patch is refused: %v", err)
			}
		})
	}
}

// Patches carried to a new tree whose values.yaml lost a key keep what
// still applies.
func TestRestorePatchesPrunesStaleOps(t *testing.T) {
	t.Parallel()
	old, _, err := NewStore(Source{Modules: []ModuleSource{{Name: "one", Values: mustParse(t, "one: {gamma: {b: 1}}")}}})
	if err != nil {
		t.Fatal(err)
	}
	p := Patch{{Op: "replace", Path: "/one/gamma/b", Value: 2.0}, {Op: "add", Path: "/one/k", Value: "v"}}
	if _, err := old.ApplyValuesPatch("hooks/h", "one", p); err != nil {
		t.Fatal(err)
	}
	next, _, err := NewStore(Source{Modules: []ModuleSource{{Name: "one", Values: mustParse(t, "one: {gamma: {}}")}}})
	if err != nil {
		t.Fatal(err)
	}
	dropped := next.RestorePatches(old.Patches())
	if got, want := opsOf(t, dropped), []string{"one hooks/h replace /one/gamma/b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("dropped = %q, want %q", got, want)
	}
	if err := readAll(next, "one"); err != nil {
		t.Fatal(err)
	}
	hv, _ := next.HelmValues("one")
	assertJSON(t, hv["one"], `{"gamma":{},"k":"v"}`)
}

// A hook that first adds a key and later replaces it, or copies it away:
// the stored patch must still apply where the key is not in the config
// values.
func TestAddThenReplaceIsStored(t *testing.T) {
	t.Parallel()
	store, _, err := NewStore(Source{Modules: []ModuleSource{{Name: "one"}}})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range []Patch{
		{{Op: "add", Path: "/one/x", Value: 1.0}},
		{{Op: "replace", Path: "/one/x", Value: 2.0}},
		{{Op: "add", Path: "/one/x", Value: 3.0}, {Op: "copy", From: "/one/x", Path: "/one/y"}, {Op: "remove", Path: "/one/x"}},
	} {
		if _, err := store.ApplyValuesPatch("h", "one", p); err != nil {
			t.Fatalf("patch %d: %v", i, err)
		}
	}
	if err := readAll(store, "one"); err != nil {
		t.Fatal(err)
	}
	hv, _ := store.HelmValues("one")
	assertJSON(t, hv["one"], `{"y":3}`)
}

// *Enabled flags a global hook sets survive the other ops of its patch,
// later patches and a ConfigMap edit, unless the edit removed what the
// flag was copied from.
func TestGlobalPatchFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		patches       []Patch
		want          bool
		wantAfterEdit bool
		wantDropped   []string
	}{
		{name: "replace of a global value and a flag", patches: []Patch{{
			{Op: "replace", Path: "/global/x", Value: 2.0}, {Op: "add", Path: "/fooEnabled", Value: true}}},
			want: true, wantAfterEdit: true, wantDropped: []string{"global g replace /global/x"}},
		{name: "flag copied from a global value", patches: []Patch{{
			{Op: "copy", From: "/global/enable", Path: "/fooEnabled"}}},
			want: true, wantDropped: []string{"global g copy /fooEnabled"}},
		{name: "flag replaced by a later patch", patches: []Patch{
			{{Op: "add", Path: "/fooEnabled", Value: true}},
			{{Op: "replace", Path: "/fooEnabled", Value: false}}}},
		{name: "flag removed by a later patch", patches: []Patch{
			{{Op: "add", Path: "/fooEnabled", Value: true}},
			{{Op: "remove", Path: "/fooEnabled"}}}},
		{name: "flag then the whole global section", patches: []Patch{
			{{Op: "add", Path: "/fooEnabled", Value: true}},
			{{Op: "add", Path: "/global", Value: map[string]any{"x": 5.0}}}}, want: true, wantAfterEdit: true},
		{name: "flag after a test", patches: []Patch{{
			{Op: "test", Path: "/global/x", Value: 1.0}, {Op: "add", Path: "/fooEnabled", Value: true}}}, want: true, wantAfterEdit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, _, err := NewStore(Source{Modules: []ModuleSource{{Name: "foo"}}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.SetConfig(map[string]string{"global": "x: 1\nenable: true\n"}); err != nil {
				t.Fatal(err)
			}
			for i, p := range tt.patches {
				if _, err := store.ApplyValuesPatch("g", "", p); err != nil {
					t.Fatalf("patch %d: %v", i, err)
				}
			}
			if got := store.Enabled("foo"); got != tt.want {
				t.Fatalf("Enabled = %v, want %v", got, tt.want)
			}
			ch, err := store.SetConfig(map[string]string{"global": "z: 1\n"})
			if err != nil {
				t.Fatal(err)
			}
			if got := opsOf(t, ch.Dropped); !reflect.DeepEqual(got, tt.wantDropped) {
				t.Errorf("dropped = %q, want %q", got, tt.wantDropped)
			}
			if got := store.Enabled("foo"); got != tt.wantAfterEdit {
				t.Fatalf("after a ConfigMap edit: Enabled = %v, want %v", got, tt.wantAfterEdit)
			}
			if ch.Enabled != (tt.want != tt.wantAfterEdit) {
				t.Errorf("Change.Enabled = %v", ch.Enabled)
			}
			if _, err := store.GlobalValues(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestFlagPatchChanges(t *testing.T) {
	t.Parallel()
	store, _, err := NewStore(Source{Modules: []ModuleSource{{Name: "foo"}}})
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range []struct{ flag, changed bool }{{true, true}, {true, false}, {false, true}} {
		res, err := store.ApplyValuesPatch("g", "", Patch{{Op: "add", Path: "/fooEnabled", Value: tt.flag}})
		if err != nil || res.Changed != tt.changed {
			t.Fatalf("patch %d: Changed = %v, %v; want %v", i, res.Changed, err, tt.changed)
		}
		if store.Enabled("foo") != tt.flag {
			t.Fatalf("patch %d: Enabled = %v", i, !tt.flag)
		}
	}
}

func TestDroppedOpString(t *testing.T) {
	t.Parallel()
	d := DroppedOp{Section: "one", Hook: "hooks/h", Op: "move", From: "/one/a", Path: "/one/b", Reason: "gone"}
	if got, want := d.String(), "one: hook hooks/h: move from /one/a to /one/b: gone"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

// json-patch panics when a test compares lists that hold null; the hook
// gets an error instead.
func TestTestOfNullInListFails(t *testing.T) {
	t.Parallel()
	store, _, err := NewStore(Source{Modules: []ModuleSource{{Name: "one", Values: mustParse(t, "one: {b: [null]}")}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.ApplyValuesPatch("h", "one", Patch{{Op: "test", Path: "/one/b", Value: []any{map[string]any{}}}})
	if err == nil || !strings.Contains(err.Error(), "hook h: values patch: json-patch:") {
		t.Fatalf("err = %v", err)
	}
}

func TestPatchesSurviveConfigChangeAndStaySmall(t *testing.T) {
	t.Parallel()
	store, _, err := NewStore(Source{Modules: []ModuleSource{{Name: "one", Values: mustParse(t, "one: {a: 1}")}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		p := Patch{{Op: "add", Path: "/one/counter", Value: float64(i)}, {Op: "add", Path: "/one/list/-", Value: "x"}}
		if i > 0 {
			p = p[:1]
		}
		if _, err := store.ApplyValuesPatch("h", "one", p); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(store.state.patches["one"]); n != 2 {
		t.Fatalf("stored patch has %d ops, want 2", n)
	}
	if _, err := store.SetConfig(map[string]string{"one": "b: 2"}); err != nil {
		t.Fatal(err)
	}
	hv, _ := store.HelmValues("one")
	assertJSON(t, hv["one"], `{"a":1,"b":2,"counter":99,"list":["x"]}`)
}

func TestRestorePatches(t *testing.T) {
	t.Parallel()
	src := Source{Modules: []ModuleSource{{Name: "one"}, {Name: "two"}}}
	old, _, _ := NewStore(src)
	_, _ = old.ApplyValuesPatch("g", "", Patch{{Op: "add", Path: "/global/x", Value: "y"}})
	_, _ = old.ApplyValuesPatch("h", "two", Patch{{Op: "add", Path: "/two/a", Value: 1.0}})
	next, _, _ := NewStore(Source{Modules: []ModuleSource{{Name: "one"}}})
	dropped := next.RestorePatches(old.Patches())
	want := []DroppedOp{{Section: "two", Hook: "h", Op: "add", Path: "/two/a", Reason: `unknown module values key "two"`}}
	if !reflect.DeepEqual(dropped, want) {
		t.Fatalf("dropped = %v", dropped)
	}
	gv, _ := next.GlobalValues()
	assertJSON(t, gv, `{"global":{"x":"y"}}`)
}
