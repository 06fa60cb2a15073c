package values

import "testing"

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
