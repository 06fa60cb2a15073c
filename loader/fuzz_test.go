package loader

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadValuesFiles: no values file or schema of a tree panics the
// loader; a tree it refuses is an error (docs/operator.md, "Values").
// The same files serve the global schemas and a module's, so a shape
// reaches both.
func FuzzLoadValuesFiles(f *testing.F) {
	seeds := []struct{ common, own, config, vals, defs string }{
		{"oneEnabled: true\n", "one: {a: 1}\n", "type: object\nproperties:\n", "x-extend: {schema: config-values.yaml}\nproperties: {internal: {type: object}}\n", ""},
		{"global: 5\n", "", "properties: null\n", "x-extend: {schema: config-values.yaml}\nproperties: {a: {}}\n", ""},
		{"", "oneEnabled: maybe\n", "", "x-extend: {schema: config-values.yaml}\n", ""},
		{"[1]", "one: false\n", "properties: {a: {$ref: 'defs.yaml#/d'}}\n", "", "d: {$ref: 'defs.yaml#/d'}\n"},
		{"one: {}\n", "two: {}\n", "properties: {a: {type: array, items: null, additionalProperties: null, enum: [null]}}\n", "properties: 5\n", ""},
		{"", "", "definitions: {a: {$ref: '#/definitions/a'}}\nproperties: {x: {$ref: '#/definitions/a'}}\n", "$ref: '#'\n", ""},
		{"", "", "properties: {a: {$ref: '../../secret.yaml'}}\n", "properties: {a: {$ref: 'http://example.com/x'}}\n", ""},
	}
	for _, s := range seeds {
		f.Add(s.common, s.own, s.config, s.vals, s.defs)
	}
	l := New(WithLogger(quietLogger()), WithHookConfigs(false))
	f.Fuzz(func(t *testing.T, common, own, config, vals, defs string) {
		dir := t.TempDir()
		files := map[string]string{
			"modules/values.yaml":                        common,
			"modules/001-one/values.yaml":                own,
			"modules/001-one/openapi/config-values.yaml": config,
			"modules/001-one/openapi/values.yaml":        vals,
			"modules/001-one/openapi/defs.yaml":          defs,
			"global-hooks/openapi/config-values.yaml":    config,
			"global-hooks/openapi/values.yaml":           vals,
			"global-hooks/openapi/defs.yaml":             defs,
		}
		for p, c := range files {
			if c == "" {
				continue
			}
			full := filepath.Join(dir, p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(filepath.Join(dir, "modules/001-one"), 0o755); err != nil {
			t.Fatal(err)
		}
		_, _ = l.Load(context.Background(), dir, filepath.Join(dir, "modules"), filepath.Join(dir, "global-hooks"))
	})
}
