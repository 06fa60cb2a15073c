package values

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"text/template"
)

func mustParse(t testing.TB, src string) Values {
	t.Helper()
	v, err := ParseYAML("test", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustJSON(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad expectation %s: %v", s, err)
	}
	return v
}

func assertJSON(t testing.TB, got any, want string) {
	t.Helper()
	g, _ := json.Marshal(got)
	var gv any
	_ = json.Unmarshal(g, &gv)
	if !reflect.DeepEqual(gv, mustJSON(t, want)) {
		t.Fatalf("got  %s\nwant %s", g, want)
	}
}

func loadSchemas(t testing.TB, dir string) *Schemas {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	s, err := LoadSchemas(dir, read(ConfigSchemaFile), read(ValuesSchemaFile))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNames(t *testing.T) {
	tests := []struct {
		dir, name, key string
		order          int
		wantErr        bool
	}{
		{dir: "001-simple-module", order: 1, name: "simple-module", key: "simpleModule"},
		{dir: "simple-one-module", order: 0, name: "simple-one-module", key: "simpleOneModule"},
		{dir: "020-cert-manager-v2", order: 20, name: "cert-manager-v2", key: "certManagerV2"},
		{dir: "005-mod-aa", order: 5, name: "mod-aa", key: "modAa"},
		{dir: "010-module-2fa", order: 10, name: "module-2fa", wantErr: true},
		{dir: "010-a--b", order: 10, name: "a--b", wantErr: true},
		{dir: "010-Upper", order: 10, name: "Upper", wantErr: true},
		{dir: "010-trailing-", order: 10, name: "trailing-", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			order, name, err := ParseModuleDir(tt.dir)
			if err != nil || order != tt.order || name != tt.name {
				t.Fatalf("ParseModuleDir = %d, %q, %v", order, name, err)
			}
			key, err := ModuleKey(name)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ModuleKey(%q) = %q, want error", name, key)
				}
				return
			}
			if err != nil || key != tt.key {
				t.Fatalf("ModuleKey(%q) = %q, %v; want %q", name, key, err, tt.key)
			}
			if back := ModuleName(key); back != name {
				t.Fatalf("ModuleName(%q) = %q", key, back)
			}
		})
	}
}

func TestDuplicateModuleKeys(t *testing.T) {
	_, _, err := NewStore(Source{Modules: []ModuleSource{{Name: "foo"}, {Name: "foo"}}})
	if err == nil || !strings.Contains(err.Error(), `both map to values key "foo"`) {
		t.Fatalf("err = %v", err)
	}
}

// spec/VALUES.md "Example": the files a module hook gets, the config patch
// that adds param3, and `replicas: 200`.
func TestValuesMDExample(t *testing.T) {
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
	// The spec prints "YES": the values.yaml says "Yes", and values are not re-cased.
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

// spec/MODULES.md "Values example", with its dotted patch path.
func TestModulesMDExample(t *testing.T) {
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

// spec/LIFECYCLE.md "Modules discovery" and its two examples, MODULES.md's
// "false" section, and LIFECYCLE-STEPS step 4's order.
func TestEnabled(t *testing.T) {
	tests := []struct {
		name   string
		common string
		own    string
		cm     map[string]string
		want   bool
	}{
		{name: "default is false"},
		{name: "common true", common: "nginxIngressEnabled: true", want: true},
		{name: "own values.yaml overrides common (LIFECYCLE.md nginx-ingress)", common: "nginxIngressEnabled: true", own: "nginxIngressEnabled: false"},
		{name: "ConfigMap overrides files (LIFECYCLE.md some-module)", common: "nginxIngressEnabled: false", cm: map[string]string{"nginxIngressEnabled": "true"}, want: true},
		{name: "ConfigMap false wins", own: "nginxIngressEnabled: true", cm: map[string]string{"nginxIngressEnabled": "false"}},
		{name: "ConfigMap section false disables (VALUES.md anotherModule)", common: "nginxIngressEnabled: true", cm: map[string]string{"nginxIngress": "false"}},
		{name: "values.yaml section false disables", common: "nginxIngressEnabled: true", own: "nginxIngress: false"},
		{name: "quoted string true counts", cm: map[string]string{"nginxIngressEnabled": `"true"`}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, _, err := NewStore(Source{
				Common:  mustParse(t, tt.common),
				Modules: []ModuleSource{{Name: "nginx-ingress", Values: mustParse(t, tt.own)}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if tt.cm != nil {
				if _, err := store.SetConfig(tt.cm); err != nil {
					t.Fatal(err)
				}
			}
			if got := store.Enabled("nginxIngress"); got != tt.want {
				t.Fatalf("Enabled = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBadFlags(t *testing.T) {
	_, _, err := NewStore(Source{CommonFile: "modules/values.yaml", Common: mustParse(t, "oneEnabled: yes-please"), Modules: []ModuleSource{{Name: "one"}}})
	if err == nil || !strings.Contains(err.Error(), "modules/values.yaml: oneEnabled: want true or false") {
		t.Fatalf("err = %v", err)
	}
	store, _, err := NewStore(Source{Modules: []ModuleSource{{Name: "one"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.SetConfig(map[string]string{"oneEnabled": "[1]", "global": "a: [", "one": "x: 1"})
	if err == nil || !strings.Contains(err.Error(), "ConfigMap key oneEnabled: want true or false") || !strings.Contains(err.Error(), "ConfigMap key global") {
		t.Fatalf("err = %v", err)
	}
	if v := store.ModuleConfigValues("one"); !reflect.DeepEqual(v["one"], map[string]any{}) {
		t.Fatalf("bad config was adopted: %v", v)
	}
}

func TestPatchScope(t *testing.T) {
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

func TestPatchesSurviveConfigChangeAndStaySmall(t *testing.T) {
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
	if n := len(store.patches["one"]); n != 2 {
		t.Fatalf("stored patch has %d ops, want 2", n)
	}
	if _, err := store.SetConfig(map[string]string{"one": "b: 2"}); err != nil {
		t.Fatal(err)
	}
	hv, _ := store.HelmValues("one")
	assertJSON(t, hv["one"], `{"a":1,"b":2,"counter":99,"list":["x"]}`)
}

// spec/VALUES.md "Validation": the invalid global ConfigMap that must stop
// start-up lists what is wrong.
func TestValidationInvalidGlobal(t *testing.T) {
	store, _, err := NewStore(Source{GlobalSchemas: loadSchemas(t, "testdata/global-openapi")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.SetConfig(map[string]string{"global": "project: myProject\n", "moduleOne": "param1: value1\n"})
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want a ValidationError", err)
	}
	msg := err.Error()
	for _, want := range []string{"global in body should have at least 2 properties", "testdata/global-openapi/config-values.yaml"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	_, err = store.SetConfig(map[string]string{"global": "project: myProject\nclusterHostname: h\n"})
	if err == nil || !strings.Contains(err.Error(), "global.clusterName in body is required") {
		t.Errorf("err = %v", err)
	}
	// several violations are all listed, each with its path
	_, err = store.SetConfig(map[string]string{"global": "project: 1\nclusterName: c\nextra: x\n"})
	for _, want := range []string{"global.project in body must be of type string", "global.extra in body is a forbidden property"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// spec/VALUES.md: the clusterHostname config patch must fail validation,
// and the discovery default is added.
func TestValidationConfigPatchAndDefault(t *testing.T) {
	store, _, err := NewStore(Source{GlobalSchemas: loadSchemas(t, "testdata/global-openapi")})
	if err != nil {
		t.Fatal(err)
	}
	cm := map[string]string{"global": "project: myProject\nclusterName: main\n"}
	if _, err := store.SetConfig(cm); err != nil {
		t.Fatal(err)
	}
	// param1 is not a config value; a hook provides it
	if _, err := store.SetConfig(map[string]string{"global": cm["global"] + "param1: p\n"}); err == nil || !strings.Contains(err.Error(), "global.param1 in body is a forbidden property") {
		t.Fatalf("err = %v", err)
	}
	if _, err := store.ApplyValuesPatch("g", "", Patch{{Op: "add", Path: "/global/clusterHostname", Value: "h"}}); err == nil || !strings.Contains(err.Error(), "global.param1 in body is required") {
		t.Fatalf("a hook that leaves param1 unset passed validation: %v", err)
	}
	if _, err := store.ApplyValuesPatch("g", "", Patch{{Op: "add", Path: "/global/param1", Value: "p"}}); err != nil {
		t.Fatal(err)
	}
	gv, _ := store.GlobalValues()
	assertJSON(t, gv, `{"global":{"project":"myProject","clusterName":"main","param1":"p","discovery":{}}}`)
	if _, has := store.GlobalConfigValues()["global"].(map[string]any)["discovery"]; has {
		t.Fatal("a values default leaked into CONFIG_VALUES_PATH")
	}
	// a value from a patch is kept, not replaced by the default
	if _, err := store.ApplyValuesPatch("g", "", Patch{{Op: "add", Path: "/global/discovery", Value: map[string]any{"k": "v"}}}); err != nil {
		t.Fatal(err)
	}
	gv, _ = store.GlobalValues()
	assertJSON(t, gv["global"].(map[string]any)["discovery"], `{"k":"v"}`)

	// The spec writes the value as "{}"; the case it describes is an object.
	p, _ := ParsePatch("p", []byte(`[{"op":"add", "path":"/global/clusterHostname", "value":{}}]`))
	next, err := ApplyConfigPatch("global-hook", "", cm, p)
	if err != nil {
		t.Fatal(err)
	}
	err = store.CheckConfig(next)
	if err == nil || !strings.Contains(err.Error(), "global.clusterHostname in body must be of type string") {
		t.Fatalf("err = %v", err)
	}
}

// spec/VALUES.md "Extending": the effective schema.
func TestXExtendEffectiveSchema(t *testing.T) {
	s := loadSchemas(t, "testdata/global-openapi")
	want := `{
	  "type": "object",
	  "additionalProperties": false,
	  "required": ["project", "clusterName", "discovery", "param1"],
	  "properties": {
	    "project": {"type": "string"},
	    "clusterName": {"type": "string"},
	    "clusterHostname": {"type": "string"},
	    "discovery": {"type": "object", "default": {}},
	    "param1": {"type": "string"}
	  }
	}`
	assertJSON(t, s.Values.Effective(), want)
}

// spec/VALUES.md "Required fields": x-required-for-helm is checked only
// before Helm.
func TestRequiredForHelm(t *testing.T) {
	s := loadSchemas(t, "testdata/helm-openapi")
	assertJSON(t, s.Values.Effective(), `{"type":"object","additionalProperties":false,
		"properties":{"param1":{"type":"string"},"param2":{"type":"string"}}}`)
	assertJSON(t, s.Helm.Effective(), `{"type":"object","additionalProperties":false,"required":["param1","param2"],
		"properties":{"param1":{"type":"string"},"param2":{"type":"string"}}}`)

	store, _, err := NewStore(Source{Modules: []ModuleSource{{Name: "two-hooks", Schemas: s}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.CheckHelmValues("twoHooks"); err == nil {
		t.Fatal("before-Helm check passed without param1 and param2")
	}
	if _, err := store.ApplyValuesPatch("hook-1", "twoHooks", Patch{{Op: "add", Path: "/twoHooks/param1", Value: "a"}}); err != nil {
		t.Fatalf("after hook 1: %v", err)
	}
	err = store.CheckHelmValues("twoHooks")
	if err == nil || !strings.Contains(err.Error(), "twoHooks.param2 in body is required") || strings.Contains(err.Error(), "param1 in body") {
		t.Fatalf("before Helm after hook 1: %v", err)
	}
	if _, err := store.ApplyValuesPatch("hook-2", "twoHooks", Patch{{Op: "add", Path: "/twoHooks/param2", Value: "b"}}); err != nil {
		t.Fatalf("after hook 2: %v", err)
	}
	if err := store.CheckHelmValues("twoHooks"); err != nil {
		t.Fatal(err)
	}
	// a patch that breaks the values schema is refused and not stored
	if _, err := store.ApplyValuesPatch("hook-3", "twoHooks", Patch{{Op: "add", Path: "/twoHooks/param1", Value: 5.0}}); err == nil {
		t.Fatal("schema violation accepted")
	}
	hv, _ := store.HelmValues("twoHooks")
	assertJSON(t, hv["twoHooks"], `{"param1":"a","param2":"b"}`)
}

func TestSchemaErrors(t *testing.T) {
	tests := []struct {
		name           string
		config, values string
		want           string
	}{
		{name: "bad yaml", values: "type: [", want: "openapi/values.yaml"},
		{name: "extend without config", values: "x-extend: {schema: config-values.yaml}\ntype: object", want: "config-values.yaml, which does not exist"},
		{name: "extend other file", config: "type: object", values: "x-extend: {schema: other.yaml}", want: `only "config-values.yaml"`},
		{name: "not a schema", values: "type: 5", want: "openapi/values.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c, v []byte
			if tt.config != "" {
				c = []byte(tt.config)
			}
			if tt.values != "" {
				v = []byte(tt.values)
			}
			_, err := LoadSchemas("openapi", c, v)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestOpenObjectStaysOpen(t *testing.T) {
	s, err := LoadSchemas("openapi", nil, []byte("type: object\nproperties:\n  discovery:\n    type: object\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Values.Validate("global", map[string]any{"discovery": map[string]any{"anything": 1.0}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Values.Validate("global", map[string]any{"other": 1.0}); err == nil {
		t.Fatal("undeclared root key accepted")
	}
}

func TestConfigPatchFlagsAndNewSection(t *testing.T) {
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

func TestRestorePatches(t *testing.T) {
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
