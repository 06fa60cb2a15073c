package values

import (
	"io/fs"
	"strings"
	"testing"
)

// schemaSeeds are the shapes real trees and mistakes give schema files:
// config-values.yaml, values.yaml, a file a $ref names (defs.yaml) and a
// ConfigMap section.
var schemaSeeds = []struct{ config, values, defs, section string }{
	// Deckhouse modules: empty or null properties extended by values.yaml
	{"type: object\nproperties:\n", "x-extend: {schema: config-values.yaml}\ntype: object\nproperties:\n  internal: {type: object, default: {}}\n", "", "{}"},
	{"type: object\nproperties: null\nrequired: null\n", "x-extend: {schema: config-values.yaml}\nproperties: {a: {type: string}}\nrequired: [a]\n", "", "a: x"},
	{"type: object\nproperties: {}\n", "x-extend: {schema: config-values.yaml}\nproperties: null\n", "", ""},
	{"properties: [1]\n", "x-extend: {schema: config-values.yaml}\nproperties: {a: {}}\n", "", ""},
	{"properties: {a: {}}\n", "x-extend: {schema: config-values.yaml}\nproperties: 5\n", "", ""},
	{"definitions: null\npatternProperties: null\n", "x-extend: {schema: config-values.yaml}\ndefinitions: {d: {}}\n", "", ""},
	// x-extend without its file, or not a map
	{"", "x-extend: {schema: config-values.yaml}\n", "", ""},
	{"type: object", "x-extend: config-values.yaml\n", "", ""},
	{"type: object", "x-extend: null\n", "", ""},
	{"type: object", "x-extend: {schema: null}\n", "", ""},
	// nulls and non-maps where a map is expected
	{"type: object\nproperties: {a: {type: array, items: null}}\n", "", "", "a: [1]"},
	{"type: object\nproperties: {a: {type: object, additionalProperties: null}}\n", "", "", "a: {b: 1}"},
	{"type: object\nproperties: {a: null, b: 5, c: [1]}\n", "", "", "a: 1"},
	{"properties: {a: {items: [null, 5, {type: string}]}}\n", "", "", "a: [x, y]"},
	{"properties: {a: {enum: [null, 1, x, {k: v}, [1]]}}\n", "", "", "a: null"},
	{"properties: {a: {type: string, default: null, enum: null}}\n", "", "", ""},
	{"properties: {a: {oneOf: null, anyOf: [null], allOf: 5, not: null}}\n", "", "", "a: 1"},
	{"properties: {a: {oneOf: [{properties: null}, {properties: {b: {}}}]}}\n", "", "", "a: {b: 1}"},
	{"additionalProperties: {properties: {x: null}}\npatternProperties: {'^a': null, '[': {}}\n", "", "", "ab: 1"},
	{"required: [a, null, 5]\nproperties: {a: {required: a}}\n", "", "", "a: {}"},
	{"type: [object, null]\nproperties: {a: {type: [string, 5]}}\n", "", "", "a: x"},
	{"x-required-for-helm: [a]\nproperties: {a: {x-required-for-helm: 5}}\n", "x-extend: {schema: config-values.yaml}\nx-required-for-helm: null\n", "", ""},
	{"properties: {a: {default: {b: 1}, properties: {b: {default: [1], items: {default: {}}}}}}\n", "", "", "a: {b: [null, {}]}"},
	{"properties: {a: {pattern: '[', format: nope, minimum: x}}\n", "", "", "a: 1"},
	// $refs: cycles, missing targets, files
	{"definitions: {a: {$ref: '#/definitions/b'}, b: {$ref: '#/definitions/a'}}\nproperties: {x: {$ref: '#/definitions/a'}}\n", "", "", "x: 1"},
	{"definitions: {n: {type: object, properties: {next: {$ref: '#/definitions/n'}}}}\nproperties: {list: {$ref: '#/definitions/n'}}\n", "", "", "list: {next: {next: {}}}"},
	{"properties: {x: {$ref: '#/definitions/missing'}}\n", "", "", ""},
	{"properties: {x: {$ref: '#'}}\n", "", "", "x: {x: {}}"},
	{"$ref: '#'\n", "", "", ""},
	{"properties: {x: {$ref: 'defs.yaml#/definitions/d'}}\n", "", "definitions: {d: {$ref: 'defs.yaml#/definitions/d'}}\n", "x: 1"},
	{"properties: {x: {$ref: 'defs.yaml'}}\n", "", "properties: null\nitems: 5\n", "x: {}"},
	{"properties: {x: {$ref: 'defs.yaml#/definitions/d'}}\n", "", "[1, 2]\n", ""},
	{"properties: {x: {$ref: 5}}\n", "", "", ""},
	{"properties: {x: {$ref: null}}\n", "", "", ""},
	// not maps at all
	{"[1]", "", "", ""},
	{"5", "null", "", ""},
	{"", "type: object\nproperties: {a: {type: object, properties: {b: {type: object}}}}\n", "", "a: {b: {c: 1}}"},
}

// FuzzLoadSchemas: no schema file, file a $ref names or ConfigMap section
// panics the loading, validation, defaulting or the store; errors name the
// file (docs/operator.md, "Values").
func FuzzLoadSchemas(f *testing.F) {
	for _, s := range schemaSeeds {
		f.Add(s.config, s.values, s.defs, s.section)
	}
	f.Fuzz(func(t *testing.T, config, vals, defs, section string) {
		var c, v []byte
		if config != "" {
			c = []byte(config)
		}
		if vals != "" {
			v = []byte(vals)
		}
		refs := func(rel string) ([]byte, error) {
			if rel == "defs.yaml" && defs != "" {
				return []byte(defs), nil
			}
			return nil, fs.ErrNotExist
		}
		sch, err := LoadSchemasWithRefs("fuzz/openapi", refs, c, v)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz/openapi/") {
				t.Fatalf("the error names no file: %v", err)
			}
			return
		}
		sec, _ := parseSection("section", section)
		for _, s := range []*Schema{sch.Config, sch.Values, sch.Helm} {
			if s == nil {
				continue
			}
			_ = s.Validate("one", sec)
			_ = s.ApplyDefaults(sec)
			_ = s.Effective()
		}
		store, _, err := NewStore(Source{Modules: []ModuleSource{{Name: "one", Schemas: sch}}})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = store.SetConfig(map[string]string{"one": section, "oneEnabled": "true"})
		_, _ = store.ApplyValuesPatch("h", "one", Patch{{Op: "add", Path: "/one/fuzz", Value: sec}})
		_, _ = store.ModuleValues("one", []string{"one"})
		_ = store.CheckHelmValues("one")
	})
}

// The crash of issue #29: config-values.yaml with `properties:` empty,
// extended by a values.yaml with properties of its own.
func TestExtendEmptyProperties(t *testing.T) {
	t.Parallel()
	for _, props := range []string{"properties:\n", "properties: null\n", "properties: {}\n", ""} {
		s, err := LoadSchemas("openapi", []byte("type: object\n"+props), []byte("x-extend: {schema: config-values.yaml}\ntype: object\nproperties:\n  internal: {type: object, properties: {a: {type: string}}}\n"))
		if err != nil {
			t.Fatalf("%q: %v", props, err)
		}
		if err := s.Values.Validate("m", map[string]any{"internal": map[string]any{"a": "x"}}); err != nil {
			t.Fatalf("%q: %v", props, err)
		}
		if err := s.Values.Validate("m", map[string]any{"other": 1.0}); err == nil {
			t.Fatalf("%q: an undeclared key passed", props)
		}
	}
	_, err := LoadSchemas("openapi", []byte("properties: {a: {}}\n"), []byte("x-extend: {schema: config-values.yaml}\nproperties: 5\n"))
	if want := "openapi/values.yaml: properties: want a map, got a number"; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}
