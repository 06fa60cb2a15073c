package values

import (
	"errors"
	"strings"
	"testing"
)

// The original's invalid global ConfigMap, which must stop start-up: the
// error lists what is wrong (docs/operator.md, "Values").
func TestValidationInvalidGlobal(t *testing.T) {
	t.Parallel()
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

// The original's clusterHostname config patch must fail validation, and the
// discovery default is added (docs/operator.md, "Values").
func TestValidationConfigPatchAndDefault(t *testing.T) {
	t.Parallel()
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

	// The original's example writes the value as "{}"; the case it describes
	// is an object.
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

// x-extend: the effective values schema (docs/operator.md, "Values").
func TestXExtendEffectiveSchema(t *testing.T) {
	t.Parallel()
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

// x-required-for-helm is checked only before Helm (docs/operator.md,
// "Values").
func TestRequiredForHelm(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
