package values

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// FuzzMergePatch feeds arbitrary values files, ConfigMap sections and
// patches through merge, patch and validation: errors are fine, panics not.
func FuzzMergePatch(f *testing.F) {
	f.Add("global: {a: 1}\noneEnabled: true\none: {b: [1]}", "x: 2", "c: {d: e}", `[{"op":"add","path":"/one/c","value":1}]`, `[{"op":"add","path":"/global/z","value":null}]`)
	f.Add("", "", "", `{"op":"replace","path":"one.b","value":"s"}`, "")
	f.Add("one: false", "[1,2]", "false", `[{"op":"move","from":"/one/a","path":"/one/b"}]`, `[{"op":"remove","path":"/oneEnabled"}]`)
	f.Add("global: 5", "a: [", "~", "[", "{}")
	schemas, err := LoadSchemas("fuzz", nil, []byte("type: object\nproperties:\n  b: {type: array, default: [1]}\n  c: {type: object, properties: {d: {type: string, default: x}}}\n"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, common, cmGlobal, cmOne, modulePatch, globalPatch string) {
		cv, err := ParseYAML("common", []byte(common))
		if err != nil {
			return
		}
		store, _, err := NewStore(Source{Common: cv, Modules: []ModuleSource{{Name: "one", Schemas: &Schemas{Values: schemas.Values, Helm: schemas.Helm}}}})
		if err != nil {
			return
		}
		data := map[string]string{"global": cmGlobal, "one": cmOne}
		_, _ = store.SetConfig(data)
		if p, err := ParsePatch("m", []byte(modulePatch)); err == nil {
			_, _ = store.ApplyValuesPatch("m", "one", p)
			_, _ = ApplyConfigPatch("m", "one", data, p)
		}
		if p, err := ParsePatch("g", []byte(globalPatch)); err == nil {
			_, _ = store.ApplyValuesPatch("g", "", p)
			_, _ = ApplyConfigPatch("g", "", data, p)
		}
		_, _ = store.ModuleValues("one", []string{"one"})
		_, _ = store.GlobalValues()
		_ = store.CheckHelmValues("one")
		_ = store.Enabled("one")
	})
}

// fuzzGen turns fuzz bytes into values and patches over a small set of keys,
// so that operations often meet each other's paths. Past the end of the
// bytes it reads zeros.
type fuzzGen struct{ data []byte }

func (g *fuzzGen) next(n int) int {
	if len(g.data) == 0 {
		return 0
	}
	b := g.data[0]
	g.data = g.data[1:]
	return int(b) % n
}

func (g *fuzzGen) pick(s ...string) string { return s[g.next(len(s))] }

func (g *fuzzGen) value(depth int) any {
	switch k := g.next(6); {
	case k == 0:
		return float64(g.next(3))
	case k == 1:
		return g.pick("s", "t")
	case k == 2:
		return g.next(2) == 0
	case k == 3 || depth == 0:
		return nil
	case k == 4:
		return g.doc(depth - 1)
	default:
		list := make([]any, g.next(3))
		for i := range list {
			list[i] = g.value(depth - 1)
		}
		return list
	}
}

func (g *fuzzGen) doc(depth int) map[string]any {
	m := map[string]any{}
	for range g.next(4) {
		m[g.pick("a", "b", "c", "0")] = g.value(depth)
	}
	return m
}

// path is a pointer under root: mostly object keys, sometimes an index.
func (g *fuzzGen) path(root string) string {
	p := root
	for range g.next(4) {
		p += "/" + g.pick("a", "b", "c", "a", "b", "0", "1", "-")
	}
	return p
}

// patch is a module hook's patch (under /one) or a global hook's (under
// /global and two flags).
func (g *fuzzGen) patch() (string, Patch) {
	key := g.pick("one", GlobalKey)
	root := func() string {
		if key == GlobalKey {
			return g.pick("/global", "/global", "/fooEnabled", "/barEnabled")
		}
		return "/one"
	}
	p := make(Patch, 1+g.next(4))
	for i := range p {
		op := Operation{Op: g.pick("add", "add", "replace", "remove", "copy", "move", "test"), Path: g.path(root())}
		switch op.Op {
		case "copy", "move":
			op.From = g.path(root())
		case "add", "replace", "test":
			op.Value = g.value(2)
		}
		p[i] = op
	}
	return key, p
}

// replayFixture is a store with module "one" (a values schema with a
// default, which is part of the document patches apply to) and module
// "foo" (for flags), and the config sections it was given.
type replayFixture struct {
	store  *Store
	values *Schema          // module one's values schema
	base   map[string]any   // config values by section
	ref    map[string]Patch // what the hooks applied since the base, uncompacted
}

var fuzzOneSchema = []byte("additionalProperties: true\nproperties:\n  c: {default: {a: 1}}\n")

func newReplayFixture(t *testing.T, g *fuzzGen) *replayFixture {
	sch, err := LoadSchemas("fuzz", nil, fuzzOneSchema)
	if err != nil {
		t.Fatal(err)
	}
	store, _, err := NewStore(Source{Modules: []ModuleSource{{Name: "one", Schemas: sch}, {Name: "foo"}}})
	if err != nil {
		t.Fatal(err)
	}
	fx := &replayFixture{store: store, values: sch.Values}
	fx.setBase(t, g)
	return fx
}

// setBase adopts new random config values and checks that SetConfig
// reports exactly the operations it pruned, and that what it kept applies.
func (fx *replayFixture) setBase(t *testing.T, g *fuzzGen) {
	fx.base = map[string]any{"one": g.doc(2), GlobalKey: g.doc(2)}
	data := map[string]string{}
	for k, v := range fx.base {
		j, _ := json.Marshal(v)
		data[k] = string(j)
	}
	before := fx.store.Patches()
	ch, err := fx.store.SetConfig(data)
	if err != nil {
		t.Fatalf("SetConfig(%v): %v", data, err)
	}
	fx.checkPruned(t, before, ch.Dropped)
}

func (fx *replayFixture) checkPruned(t *testing.T, before map[string]Patch, drops []DroppedOp) {
	t.Helper()
	n := map[string]int{}
	for _, d := range drops {
		n[d.Section]++
	}
	fx.ref = fx.store.Patches()
	for key, p := range before {
		if got := len(p) - len(fx.ref[key]); got != n[key] {
			t.Fatalf("%s: %d ops pruned, %d reported: %v", key, got, n[key], drops)
		}
	}
	for key, p := range fx.ref {
		if _, err := p.apply(fx.doc(key)); err != nil {
			t.Fatalf("%s: a pruned patch does not apply: %v: %v", key, err, p)
		}
	}
}

// doc is the document a section's patches apply to: its config values
// with its values defaults.
func (fx *replayFixture) doc(key string) map[string]any {
	if key == "one" {
		return map[string]any{key: fx.values.ApplyDefaults(fx.base[key])}
	}
	return map[string]any{key: deepCopy(fx.base[key])}
}

// hook applies a patch as a hook would. When the store takes it, its stored
// (compacted) patch must make what the hooks' patches make.
func (fx *replayFixture) hook(t *testing.T, key string, p Patch) {
	t.Helper()
	module := key
	if key == GlobalKey {
		module = ""
	}
	if _, err := fx.store.ApplyValuesPatch("h", module, p); err != nil {
		return
	}
	fx.ref[key] = append(fx.ref[key], p...)
	if _, err := fx.ref[key].apply(fx.doc(key)); err != nil {
		t.Fatalf("%s: the hooks' patches %v do not apply: %v", key, fx.ref[key], err)
	}
	stored := fx.store.Patches()[key]
	if err := equivalentOn(fx.doc(key), fx.ref[key], stored); err != nil {
		t.Fatalf("%s: stored %v for %v: %v", key, stored, fx.ref[key], err)
	}
}

// checkReads: no read fails, and a module's flag is the one its global
// patch leaves.
func (fx *replayFixture) checkReads(t *testing.T) {
	t.Helper()
	if err := readAll(fx.store, "one"); err != nil {
		t.Fatal(err)
	}
	doc, err := fx.store.Patches()[GlobalKey].apply(fx.doc(GlobalKey))
	if err != nil {
		t.Fatalf("the stored global patch does not apply: %v", err)
	}
	want, _ := flagValue(doc["fooEnabled"])
	if got := fx.store.Enabled("foo"); got != want {
		t.Fatalf("Enabled(foo) = %v, the global patch leaves %v", got, want)
	}
}

// FuzzReplay: random patches on random config values, then new config
// values and a new tree. Reads never fail, SetConfig and RestorePatches
// report what they drop, flags survive, and compaction keeps what every
// op sequence makes wherever it applies.
func FuzzReplay(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x02\x00\x01\x03\x00\x00\x00\x02\x01\x00\x00\x04\x00\x01\x05\x00"))
	f.Add([]byte("bug report: add /x, copy /x to /y, remove /x; replace then edit"))
	f.Add([]byte{3, 1, 0, 1, 1, 0, 4, 2, 0, 0, 1, 3, 0, 1, 2, 0, 1, 4, 0, 0, 2, 0, 1, 3, 1, 0, 2, 2, 1, 0, 0, 5, 1, 2, 3, 4, 5, 6, 7})
	// long seeds reach several patches and a base change at once, which
	// mutations of the short ones are slow to find
	r := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		seed := make([]byte, 160)
		for i := range seed {
			seed[i] = byte(r.Uint32())
		}
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &fuzzGen{data: data}
		fx := newReplayFixture(t, g)
		all := map[string]Patch{}
		for range 1 + g.next(6) {
			key, p := g.patch()
			all[key] = append(all[key], p...)
			fx.hook(t, key, p)
		}
		oldBase := fx.base
		fx.setBase(t, g)
		fx.checkReads(t)
		for key, p := range all {
			for _, base := range []any{oldBase[key], fx.base[key], map[string]any{}} {
				if err := equivalentOn(map[string]any{key: base}, p, compact(p)); err != nil {
					t.Fatalf("%s: %v: %v", key, p, err)
				}
			}
		}
		key, p := g.patch()
		fx.hook(t, key, p)
		fx.checkReads(t)

		next := newReplayFixture(t, g)
		before := fx.store.Patches()
		drops := next.store.RestorePatches(before)
		next.checkPruned(t, before, drops)
		next.checkReads(t)
	})
}
