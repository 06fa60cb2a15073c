package values

import (
	"reflect"
	"strings"
	"testing"
)

// The layout sorts the tree's values files into levels: sections, flags,
// a section that is the literal false, keys a module's file may not hold.
func TestLayoutFill(t *testing.T) {
	t.Parallel()
	mod := "mod"
	tests := []struct {
		name     string
		doc      string
		only     *string
		want     level
		warnings []string
		err      string
	}{
		{name: "common file", doc: "global: {a: 1}\nmod: {b: 2}\nmodEnabled: true\nother: false\nfreeEnabled: \"false\"",
			want: level{sections: map[string]any{"global": map[string]any{"a": 1.0}, "mod": map[string]any{"b": 2.0}},
				flags: map[string]bool{"mod": true, "free": false}, disabled: map[string]bool{"other": true}}},
		{name: "a module's file holds its key and flag only", doc: "mod: {b: 2}\nmodEnabled: false\nglobal: {a: 1}", only: &mod,
			want:     level{sections: map[string]any{"mod": map[string]any{"b": 2.0}}, flags: map[string]bool{"mod": false}, disabled: map[string]bool{}},
			warnings: []string{`f: key "global" ignored`}},
		{name: "a module named like a flag is a section", doc: "xEnabled: {c: 3}",
			want: level{sections: map[string]any{"xEnabled": map[string]any{"c": 3.0}}, flags: map[string]bool{}, disabled: map[string]bool{}}},
		{name: "global must be a map", doc: "global: [1]", err: "f: global: want a map, got a list"},
		{name: "a flag must be a boolean", doc: "modEnabled: maybe", err: "f: modEnabled: want true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lay := &layout{modules: map[string]*module{"mod": {name: "mod", key: "mod"}, "xEnabled": {name: "x-enabled", key: "xEnabled"}}}
			l := newLevel()
			var warnings []string
			err := lay.fill(&l, "f", mustParse(t, tt.doc), tt.only, &warnings)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(l, tt.want) {
				t.Fatalf("level = %+v\nwant    %+v", l, tt.want)
			}
			if len(warnings) != len(tt.warnings) {
				t.Fatalf("warnings = %q, want %q", warnings, tt.warnings)
			}
			for i, w := range tt.warnings {
				if !strings.HasPrefix(warnings[i], w) {
					t.Fatalf("warning %q, want %q...", warnings[i], w)
				}
			}
		})
	}
}

// A section's config values: common file, the module's file, the config
// schema's defaults, then the ConfigMap merged into them.
func TestLayoutConfigMerged(t *testing.T) {
	t.Parallel()
	sch, err := LoadSchemas("mod", []byte("type: object\nproperties:\n  d: {type: string, default: dflt}\n  o: {type: object, default: {x: 1}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	lay := &layout{
		modules: map[string]*module{"mod": {name: "mod", key: "mod", schemas: sch}},
		common:  level{sections: map[string]any{"mod": map[string]any{"a": "common", "b": "common"}}},
		own:     level{sections: map[string]any{"mod": map[string]any{"b": "own"}}},
	}
	tests := []struct {
		name string
		cfg  map[string]any
		want string
	}{
		{"files and defaults", nil, `{"a":"common","b":"own","d":"dflt","o":{"x":1}}`},
		{"the ConfigMap over them, merged into a defaulted object", map[string]any{"b": "cm", "o": map[string]any{"y": 2.0}},
			`{"a":"common","b":"cm","d":"dflt","o":{"x":1,"y":2}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := newLevel()
			if tt.cfg != nil {
				cfg.sections["mod"] = tt.cfg
			}
			assertJSON(t, lay.configMerged(cfg, "mod", sch), tt.want)
		})
	}
}

// CheckConfig judges data as SetConfig would and leaves the state alone.
func TestCheckConfigLeavesTheState(t *testing.T) {
	t.Parallel()
	sch, err := LoadSchemas("mod", []byte("type: object\nproperties:\n  num: {type: integer}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	store, _, err := NewStore(Source{Modules: []ModuleSource{{Name: "mod", Schemas: sch, Values: mustParse(t, "modEnabled: true")}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.SetConfig(map[string]string{"mod": "num: 1"}); err != nil {
		t.Fatal(err)
	}
	if err := store.CheckConfig(map[string]string{"mod": "num: x"}); err == nil {
		t.Fatal("CheckConfig took a string for an integer")
	}
	if err := store.CheckConfig(map[string]string{"mod": "num: 2"}); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, store.ModuleConfigValues("mod")["mod"], `{"num":1}`)
}
