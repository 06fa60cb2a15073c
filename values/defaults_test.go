package values

import (
	"testing"
)

// Defaults are applied as the original applies them: into defaulted
// objects, into each element of a list through its items schema, through
// $refs; not from a null default, nor through patternProperties or
// additionalProperties.
func TestApplyDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		schema string
		in     string
		want   string
	}{
		{
			name: "nested in a defaulted object",
			schema: `
properties:
  a:
    type: object
    default: {}
    properties:
      b: {type: string, default: x}
      c:
        type: object
        default: {d: 1}
        properties:
          d: {type: integer}
          e: {type: integer, default: 2}`,
			in:   `{}`,
			want: `{"a":{"b":"x","c":{"d":1,"e":2}}}`,
		},
		{
			name: "nested in a present object",
			schema: `
properties:
  a:
    type: object
    properties:
      b: {type: string, default: x}`,
			in:   `{"a":{}}`,
			want: `{"a":{"b":"x"}}`,
		},
		{
			name: "array items",
			schema: `
properties:
  ports:
    type: array
    items:
      type: object
      properties:
        name: {type: string}
        port: {type: integer, default: 80}`,
			in:   `{"ports":[{"name":"a"},{"name":"b","port":81}]}`,
			want: `{"ports":[{"name":"a","port":80},{"name":"b","port":81}]}`,
		},
		{
			name: "items of a defaulted array",
			schema: `
properties:
  ports:
    type: array
    default: [{name: a}]
    items:
      type: object
      properties:
        name: {type: string}
        port: {type: integer, default: 80}`,
			in:   `{}`,
			want: `{"ports":[{"name":"a","port":80}]}`,
		},
		{
			name: "arrays of arrays",
			schema: `
properties:
  m:
    type: array
    items:
      type: array
      items:
        type: object
        properties: {v: {default: 0}}`,
			in:   `{"m":[[{}],[{"v":1},{}]]}`,
			want: `{"m":[[{"v":0}],[{"v":1},{"v":0}]]}`,
		},
		{
			name: "through a $ref",
			schema: `
definitions:
  port:
    type: object
    properties:
      port: {type: integer, default: 80}
properties:
  main: {$ref: "#/definitions/port"}
  more: {type: array, items: {$ref: "#/definitions/port"}}`,
			in:   `{"main":{},"more":[{}]}`,
			want: `{"main":{"port":80},"more":[{"port":80}]}`,
		},
		{
			name:   "a null default is no default",
			schema: `properties: {a: {default: null}}`,
			in:     `{}`,
			want:   `{}`,
		},
		{
			name: "present values win, null included",
			schema: `
properties:
  a: {type: string, default: x}
  b: {type: object, default: {c: 1}, properties: {c: {}}, additionalProperties: true}`,
			in:   `{"a":"y","b":null}`,
			want: `{"a":"y","b":null}`,
		},
		{
			name: "not through patternProperties or additionalProperties",
			schema: `
patternProperties:
  "^p":
    type: object
    properties: {v: {default: 1}}
additionalProperties:
  type: object
  properties: {v: {default: 1}}`,
			in:   `{"px":{},"other":{}}`,
			want: `{"px":{},"other":{}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := LoadSchemas("t", nil, []byte(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			in := mustJSON(t, tt.in)
			got := s.Values.ApplyDefaults(in)
			assertJSON(t, got, tt.want)
			assertJSON(t, in, tt.in) // the input is not changed
		})
	}
}

// The layers of a section's values, as the original stacks them: values
// files, config-values.yaml defaults, the ConfigMap, values.yaml defaults,
// then the hooks' patches. CONFIG_VALUES_PATH has the ConfigMap only.
func TestDefaultsLayering(t *testing.T) {
	t.Parallel()
	config := `
type: object
properties:
  limits:
    type: object
    default: {cpu: 1, memory: 2}
    properties:
      cpu: {type: integer}
      memory: {type: integer}
  replicas: {type: integer, default: 1}`
	vals := `
x-extend: {schema: config-values.yaml}
type: object
properties:
  internal:
    type: object
    default: {}
    properties:
      token: {type: string, default: none}
      hosts: {type: array, default: [{}], items: {type: object, properties: {port: {type: integer, default: 80}}}}`
	tests := []struct {
		name   string
		cm     string
		patch  Patch
		want   string
		config string
	}{
		{
			name:   "defaults alone",
			want:   `{"limits":{"cpu":1,"memory":2},"replicas":1,"internal":{"token":"none","hosts":[{"port":80}]}}`,
			config: `null`,
		},
		{
			name:   "the ConfigMap merges into a defaulted object",
			cm:     "limits: {cpu: 5}\n",
			want:   `{"limits":{"cpu":5,"memory":2},"replicas":1,"internal":{"token":"none","hosts":[{"port":80}]}}`,
			config: `{"limits":{"cpu":5}}`,
		},
		{
			name:   "a hook replaces a defaulted key",
			patch:  Patch{{Op: "replace", Path: "/mod/internal/token", Value: "t"}},
			want:   `{"limits":{"cpu":1,"memory":2},"replicas":1,"internal":{"token":"t","hosts":[{"port":80}]}}`,
			config: `null`,
		},
		{
			name:   "a hook's removal of a defaulted key sticks",
			patch:  Patch{{Op: "remove", Path: "/mod/internal/token"}},
			want:   `{"limits":{"cpu":1,"memory":2},"replicas":1,"internal":{"hosts":[{"port":80}]}}`,
			config: `null`,
		},
		{
			name:   "a hook's list gets no item defaults",
			patch:  Patch{{Op: "replace", Path: "/mod/internal/hosts", Value: []any{map[string]any{}}}},
			want:   `{"limits":{"cpu":1,"memory":2},"replicas":1,"internal":{"token":"none","hosts":[{}]}}`,
			config: `null`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sch, err := LoadSchemas("mod/openapi", []byte(config), []byte(vals))
			if err != nil {
				t.Fatal(err)
			}
			store, _, err := NewStore(Source{Modules: []ModuleSource{{Name: "mod", Schemas: sch}}})
			if err != nil {
				t.Fatal(err)
			}
			if tt.cm != "" {
				if _, err := store.SetConfig(map[string]string{"mod": tt.cm}); err != nil {
					t.Fatal(err)
				}
			}
			if tt.patch != nil {
				if _, err := store.ApplyValuesPatch("h", "mod", tt.patch); err != nil {
					t.Fatal(err)
				}
			}
			v, err := store.HelmValues("mod")
			if err != nil {
				t.Fatal(err)
			}
			assertJSON(t, v["mod"], tt.want)
			assertJSON(t, store.ModuleConfigValues("mod")["mod"], tt.config)
		})
	}
}
