package values

import (
	"reflect"
	"strings"
	"testing"
	"text/template"
)

// The original's values example, end to end: the files a module hook gets,
// the config patch that adds param3, and a chart that renders
// `replicas: 200` (docs/operator.md, "Values").
func TestModuleHookExample(t *testing.T) {
	t.Parallel()
	store, _, err := NewStore(Source{
		Common: mustParse(t, "global:\n  param1: 100\n  param2: \"Yes\"\n"),
		Modules: []ModuleSource{{
			Name:   "some-module",
			Values: mustParse(t, "someModule:\n  param1: \"String\"\n"),
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cm := map[string]string{
		"global":     "param1: 200\n",
		"someModule": "param1: \"Long string\"\nparam2: \"FOO\"\n",
	}
	if _, err := store.SetConfig(cm); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, store.ModuleConfigValues("someModule"),
		`{"global":{"param1":200},"someModule":{"param1":"Long string","param2":"FOO"}}`)
	mv, err := store.ModuleValues("someModule", []string{"some-module"})
	if err != nil {
		t.Fatal(err)
	}
	// The original's example prints "YES": the values.yaml says "Yes", and
	// values are not re-cased.
	assertJSON(t, mv, `{"global":{"param1":200,"param2":"Yes","enabledModules":["some-module"]},
		"someModule":{"param1":"Long string","param2":"FOO"}}`)

	patch, err := ParsePatch("CONFIG_VALUES_JSON_PATCH_PATH", []byte(`  [{"op":"add", "path":"/someModule/param3", "value":"newValue"}]`))
	if err != nil {
		t.Fatal(err)
	}
	next, err := ApplyConfigPatch("001-some-module/hooks/hook.sh", "someModule", cm, patch)
	if err != nil {
		t.Fatal(err)
	}
	if next["global"] != cm["global"] {
		t.Fatalf("untouched key rewritten: %q", next["global"])
	}
	if got := mustParse(t, next["someModule"]); !reflect.DeepEqual(map[string]any(got), mustJSON(t, `{"param1":"Long string","param2":"FOO","param3":"newValue"}`)) {
		t.Fatalf("someModule = %q", next["someModule"])
	}
	ch, err := store.SetConfig(next)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Global || ch.Enabled || !reflect.DeepEqual(ch.Modules, []string{"someModule"}) {
		t.Fatalf("change = %+v", ch)
	}
	assertJSON(t, store.ModuleConfigValues("someModule"),
		`{"global":{"param1":200},"someModule":{"param1":"Long string","param2":"FOO","param3":"newValue"}}`)
	mv, _ = store.ModuleValues("someModule", []string{"some-module"})
	assertJSON(t, mv, `{"global":{"param1":200,"param2":"Yes","enabledModules":["some-module"]},
		"someModule":{"param1":"Long string","param2":"FOO","param3":"newValue"}}`)

	hv, err := store.HelmValues("someModule")
	if err != nil {
		t.Fatal(err)
	}
	if _, has := hv["global"].(map[string]any)["enabledModules"]; has {
		t.Fatal("Helm values carry enabledModules")
	}
	var out strings.Builder
	tpl := template.Must(template.New("t").Parse("replicas: {{ .Values.global.param1 }}"))
	if err := tpl.Execute(&out, map[string]any{"Values": map[string]any(hv)}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "replicas: 200" {
		t.Fatalf("rendered %q", out.String())
	}
}

// The original's module values example, with its dotted patch path
// (docs/operator.md, "Values").
func TestDottedPatchPathExample(t *testing.T) {
	t.Parallel()
	store, _, err := NewStore(Source{Modules: []ModuleSource{{
		Name:   "simple-one-module",
		Values: mustParse(t, "simpleOneModule:\n  param1: value_1\n  param2: value_2\n"),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.SetConfig(map[string]string{
		"global":          "globParam1: globalValue1\n",
		"simpleOneModule": "param3: value_3\nparam2: newValue_1\n",
	}); err != nil {
		t.Fatal(err)
	}
	v, _ := store.ModuleValues("simpleOneModule", []string{"simple-one-module"})
	assertJSON(t, v, `{"global":{"globParam1":"globalValue1","enabledModules":["simple-one-module"]},
		"simpleOneModule":{"param1":"value_1","param2":"newValue_1","param3":"value_3"}}`)
	p, err := ParsePatch("VALUES_JSON_PATCH_PATH", []byte(`{"op": "replace", "path":"simpleOneModule.param2", "value":"patchedValue_2"}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := store.ApplyValuesPatch("module-hooks.sh", "simpleOneModule", p)
	if err != nil || !res.Changed {
		t.Fatalf("res = %+v, err = %v", res, err)
	}
	hv, _ := store.HelmValues("simpleOneModule")
	assertJSON(t, hv, `{"global":{"globParam1":"globalValue1"},
		"simpleOneModule":{"param1":"value_1","param2":"patchedValue_2","param3":"value_3"}}`)
}

func TestGlobalHookFiles(t *testing.T) {
	t.Parallel()
	store, _, err := NewStore(Source{
		Common:  mustParse(t, "global:\n  a: 1\n  nested: {x: 1, b: [1, 2]}\nsomeModule: {p: 1}\n"),
		Modules: []ModuleSource{{Name: "some-module"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.SetConfig(map[string]string{"global": "nested: {b: [3]}\n", "someModule": "q: 2"}); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, store.GlobalConfigValues(), `{"global":{"nested":{"b":[3]}}}`)
	gv, _ := store.GlobalValues()
	// maps merge deeply; lists are replaced
	assertJSON(t, gv, `{"global":{"a":1,"nested":{"x":1,"b":[3]}}}`)
}

func TestModuleValuesFileIgnoresOtherKeys(t *testing.T) {
	t.Parallel()
	_, warnings, err := NewStore(Source{Modules: []ModuleSource{{
		Name:   "one",
		File:   "modules/001-one/values.yaml",
		Values: mustParse(t, "one: {a: 1}\noneEnabled: true\nother: {b: 2}\nglobal: {c: 3}\n"),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 2 || !strings.Contains(strings.Join(warnings, "\n"), `modules/001-one/values.yaml: key "other" ignored`) {
		t.Fatalf("warnings = %q", warnings)
	}
}

// TestConfigValuesOfAbsentSections: CONFIG_VALUES_PATH has null for a
// section the ConfigMap lacks (or leaves empty), as the original's, and the
// section as written otherwise, `{}` included.
func TestConfigValuesOfAbsentSections(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		cm             map[string]string
		global, module string
	}{
		{name: "no ConfigMap", global: `{"global":null}`, module: `{"global":null,"mod":null}`},
		{name: "other keys only", cm: map[string]string{"modEnabled": "true"}, global: `{"global":null}`, module: `{"global":null,"mod":null}`},
		{name: "empty sections", cm: map[string]string{"global": "", "mod": ""}, global: `{"global":null}`, module: `{"global":null,"mod":null}`},
		{name: "empty maps", cm: map[string]string{"global": "{}", "mod": "{}"}, global: `{"global":{}}`, module: `{"global":{},"mod":{}}`},
		{name: "sections", cm: map[string]string{"global": "a: 1", "mod": "b: 2"}, global: `{"global":{"a":1}}`, module: `{"global":{"a":1},"mod":{"b":2}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, _, err := NewStore(Source{Modules: []ModuleSource{{Name: "mod", Values: mustParse(t, "x: 1")}}})
			if err != nil {
				t.Fatal(err)
			}
			if tt.cm != nil {
				if _, err := store.SetConfig(tt.cm); err != nil {
					t.Fatal(err)
				}
			}
			assertJSON(t, store.GlobalConfigValues(), tt.global)
			assertJSON(t, store.ModuleConfigValues("mod"), tt.module)
		})
	}
}
