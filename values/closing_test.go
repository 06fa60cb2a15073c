package values

import (
	"strings"
	"testing"
)

// Schemas are closed where the original closes them: the root, properties
// and items, recursively, and nowhere else (docs/operator.md, "Values").
// Each case validates one value against a values schema; want is "" for
// valid, or a part of the violation.
func TestCloseObjects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema, value, want string
	}{
		// combinators: their branches stay as written
		{name: "oneOf branches list different properties",
			schema: `
type: object
properties:
  o:
    type: object
    properties: {kind: {type: string}, a: {type: string}, b: {type: string}}
    oneOf:
    - properties: {kind: {enum: [A]}, a: {type: string}}
    - properties: {kind: {enum: [B]}, b: {type: string}}`,
			value: `{o: {kind: A, a: x, b: w}}`},
		{name: "oneOf still decides", schema: `
type: object
properties:
  o:
    type: object
    properties: {kind: {type: string}, a: {type: string}}
    oneOf:
    - properties: {kind: {enum: [A]}}
    - properties: {kind: {enum: [B]}}`,
			value: `{o: {kind: C}}`, want: "oneOf"},
		{name: "anyOf branch", schema: `
type: object
properties:
  o:
    type: object
    properties: {a: {type: string}, b: {type: string}}
    anyOf:
    - properties: {a: {type: string}}
      required: [a]`,
			value: `{o: {a: x, b: w}}`},
		{name: "allOf branches", schema: `
type: object
properties:
  o:
    type: object
    properties: {a: {type: string}, b: {type: string}}
    allOf:
    - properties: {a: {type: string}}
    - properties: {b: {type: string}}`,
			value: `{o: {a: x, b: w}}`},
		{name: "not branch", schema: `
type: object
properties:
  o:
    type: object
    properties: {a: {type: string}, b: {type: string}}
    not:
      properties: {a: {enum: [bad]}}
      required: [a]`,
			value: `{o: {a: x, b: w}}`},
		{name: "not still refuses", schema: `
type: object
properties:
  o:
    type: object
    properties: {a: {type: string}}
    not: {required: [a]}`,
			value: `{o: {a: x}}`, want: "must not validate"},
		{name: "nested combinators", schema: `
type: object
properties:
  o:
    type: object
    properties: {p: {type: object, properties: {x: {type: string}, w: {type: string}}}}
    allOf:
    - properties:
        p:
          anyOf:
          - oneOf:
            - properties: {x: {type: string}}
              required: [x]`,
			value: `{o: {p: {x: a, w: b}}}`},
		{name: "an object inside a branch stays open", schema: `
type: object
properties:
  o:
    type: object
    properties: {p: {type: object}}
    oneOf:
    - properties: {p: {properties: {x: {type: string}}}}`,
			value: `{o: {p: {x: a, extra: b}}}`},

		// where the original closes
		{name: "root closed", schema: "type: object\nproperties: {a: {type: string}}", value: `{a: x, b: w}`, want: "s.b in body is a forbidden property"},
		{name: "nested property closed", schema: `
type: object
properties:
  a: {type: object, properties: {b: {type: object, properties: {c: {type: string}}}}}`,
			value: `{a: {b: {c: x, d: y}}}`, want: "s.a.b.d in body is a forbidden property"},
		{name: "items closed", schema: `
type: object
properties:
  l: {type: array, items: {type: object, properties: {n: {type: string}}}}`,
			value: `{l: [{n: a, m: b}]}`, want: "forbidden property"},
		{name: "tuple items closed", schema: `
type: object
properties:
  l: {type: array, items: [{type: object, properties: {n: {type: string}}}]}`,
			value: `{l: [{n: a, m: b}]}`, want: "forbidden property"},
		{name: "patternProperties close their node", schema: `
type: object
properties:
  m: {type: object, patternProperties: {"^x-": {type: string}}}`,
			value: `{m: {x-a: s, z: t}}`, want: "s.m.z in body is a forbidden property"},
		{name: "a $ref from properties is closed where it is used", schema: `
type: object
definitions:
  d: {type: object, properties: {n: {type: string}}}
properties:
  r: {$ref: "#/definitions/d"}`,
			value: `{r: {n: a, m: b}}`, want: "s.r.m in body is a forbidden property"},

		// where it does not
		{name: "bare object open", schema: "type: object\nproperties: {d: {type: object}}", value: `{d: {any: 1}}`},
		{name: "explicit true stays", schema: `
type: object
properties:
  a: {type: object, additionalProperties: true, properties: {b: {type: string}}}`,
			value: `{a: {b: x, c: y}}`},
		{name: "under an explicit true nothing is closed", schema: `
type: object
properties:
  a:
    type: object
    additionalProperties: true
    properties: {b: {type: object, properties: {c: {type: string}}}}`,
			value: `{a: {b: {c: x, d: y}}}`},
		{name: "an additionalProperties schema stays open", schema: `
type: object
properties:
  a:
    type: object
    additionalProperties: {type: object, properties: {n: {type: string}}}`,
			value: `{a: {k: {n: x, m: y}}}`},
		{name: "a patternProperties schema stays open", schema: `
type: object
properties:
  m: {type: object, patternProperties: {"^x-": {type: object, properties: {n: {type: string}}}}}`,
			value: `{m: {x-a: {n: s, o: t}}}`},
		{name: "a $ref from a branch stays open", schema: `
type: object
definitions:
  d: {type: object, properties: {n: {type: string}}}
properties:
  r: {type: object, properties: {n: {type: string}, m: {type: string}}, allOf: [{$ref: "#/definitions/d"}]}`,
			value: `{r: {n: a, m: b}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := LoadSchemas("openapi", nil, []byte(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			err = s.Values.Validate("s", map[string]any(mustParse(t, tt.value)))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// Deckhouse's istio.controlPlane: an object whose oneOf branches each list
// different properties of resourcesManagement, with the defaults of both
// modes filled in. Both config-values.yaml and the values.yaml that extends
// it (and its before-Helm copy) take a valid config, and the x-extend
// merged properties are closed as the config schema's own.
func TestCloseObjectsControlPlane(t *testing.T) {
	t.Parallel()
	s := loadSchemas(t, "testdata/controlplane-openapi")
	valid := mustParse(t, `
controlPlane:
  resourcesManagement:
    mode: VPA
    vpa: {mode: Auto, cpu: {min: 50m}}
`)
	v := s.Config.ApplyDefaults(map[string]any(valid))
	for name, sch := range map[string]*Schema{"config": s.Config, "values": s.Values, "helm": s.Helm} {
		if err := sch.Validate("istio", v); err != nil {
			t.Errorf("%s schema refuses a valid config: %v", name, err)
		}
	}
	bad := []struct{ value, want string }{
		{`{controlPlane: {resourcesManagement: {mode: VPA, vpa: {mode: Auto, typo: 1}}}}`, "istio.controlPlane.resourcesManagement.vpa.typo in body is a forbidden property"},
		{`{controlPlane: {typo: 1}}`, "istio.controlPlane.typo in body is a forbidden property"},
		{`{controlPlane: {resourcesManagement: {mode: Other}}}`, "resourcesManagement.mode"},
	}
	for _, b := range bad {
		for name, sch := range map[string]*Schema{"config": s.Config, "values": s.Values} {
			err := sch.Validate("istio", map[string]any(mustParse(t, b.value)))
			if err == nil || !strings.Contains(err.Error(), b.want) {
				t.Errorf("%s schema, %s: err = %v, want %q", name, b.value, err, b.want)
			}
		}
	}
}
