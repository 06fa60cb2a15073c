package values

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// benchStore builds n modules, each with a 20-property config and values
// schema, static values and a ConfigMap section.
func benchStore(b *testing.B, n int) (*Store, map[string]string) {
	b.Helper()
	var props, static strings.Builder
	for i := range 20 {
		fmt.Fprintf(&props, "  p%d: {type: string, default: d%d}\n", i, i)
	}
	schemaText := "type: object\nproperties:\n" + props.String()
	common := Values{"global": map[string]any{"a": "b"}}
	var mods []ModuleSource
	cm := map[string]string{"global": "a: c\n"}
	for i := range n {
		name := fmt.Sprintf("mod-%c%c", 'a'+i/26, 'a'+i%26)
		key, _ := ModuleKey(name)
		sch, err := LoadSchemas(name, []byte(schemaText), []byte("x-extend: {schema: config-values.yaml}\ntype: object\nproperties:\n  computed: {type: string}\n"))
		if err != nil {
			b.Fatal(err)
		}
		static.Reset()
		for j := range 10 {
			fmt.Fprintf(&static, "  p%d: v%d\n", j, j)
		}
		v, _ := ParseYAML("v", []byte(key+":\n"+static.String()))
		mods = append(mods, ModuleSource{Name: name, Values: v, Schemas: sch})
		common[EnabledKey(key)] = true
		cm[key] = "p15: from-cm\n"
	}
	store, _, err := NewStore(Source{Common: common, Modules: mods})
	if err != nil {
		b.Fatal(err)
	}
	return store, cm
}

// BenchmarkMergeValidate100: adopt a ConfigMap for 100 modules (config
// schema validation of every section) and compute every module's Helm values.
func BenchmarkMergeValidate100(b *testing.B) {
	store, cm := benchStore(b, 100)
	keys := slices.Clone(store.layout.order)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		cm["global"] = fmt.Sprintf("a: c%d\n", i)
		if _, err := store.SetConfig(cm); err != nil {
			b.Fatal(err)
		}
		for _, k := range keys {
			if _, err := store.HelmValues(k); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkHookPatch: one module hook's values patch, applied and re-validated.
func BenchmarkHookPatch(b *testing.B) {
	store, cm := benchStore(b, 100)
	if _, err := store.SetConfig(cm); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		p := Patch{{Op: "add", Path: "/modAa/computed", Value: fmt.Sprint(i)}}
		if _, err := store.ApplyValuesPatch("h", "modAa", p); err != nil {
			b.Fatal(err)
		}
	}
}
