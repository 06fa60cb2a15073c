package values

import (
	"slices"
	"strings"
	"testing"
)

// Which ConfigMap sections SetConfig validates (docs/operator.md,
// "Values"): those of modules enabled as far as is known before
// discovery, and nothing else.
func TestSetConfigChecksEnabledSections(t *testing.T) {
	t.Parallel()
	sch, err := LoadSchemas("openapi", []byte("type: object\nrequired: [count]\nproperties:\n  count: {type: integer}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	mod := func(name string, scripted bool) ModuleSource {
		return ModuleSource{Name: name, Schemas: sch, Scripted: scripted}
	}
	tests := []struct {
		name   string
		common string            // $MODULES_DIR/values.yaml
		data   map[string]string // the ConfigMap besides the bad section
		active []string
		patch  bool // a global hook set the flag
		mod    ModuleSource
		check  bool
	}{
		{name: "disabled", mod: mod("m", false)},
		{name: "disabled, its section empty", mod: mod("m", false), data: map[string]string{"m": "{}"}},
		{name: "values file enables it", common: "mEnabled: true", mod: mod("m", false), check: true},
		{name: "values file enables it, the ConfigMap disables it", common: "mEnabled: true", data: map[string]string{"mEnabled": "false"}, mod: mod("m", false)},
		{name: "values file enables it, its section is false", common: "mEnabled: true", data: map[string]string{"m": "false"}, mod: mod("m", false)},
		{name: "values file enables it, an enabled script decides", common: "mEnabled: true", mod: mod("m", true)},
		{name: "the ConfigMap enables it", data: map[string]string{"mEnabled": "true"}, mod: mod("m", true), check: true},
		{name: "discovery enabled it", active: []string{"m"}, mod: mod("m", true), check: true},
		{name: "a global hook's flag", patch: true, mod: mod("m", false)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, _, err := NewStore(Source{Common: mustParse(t, tt.common), Modules: []ModuleSource{tt.mod}})
			if err != nil {
				t.Fatal(err)
			}
			store.Sections().SetActive(tt.active)
			if tt.patch {
				if _, err := store.ApplyValuesPatch("g", "", Patch{{Op: "add", Path: "/mEnabled", Value: true}}); err != nil {
					t.Fatal(err)
				}
			}
			data := map[string]string{"m": "count: x\n"}
			for k, v := range tt.data {
				data[k] = v
			}
			// the settings checks run for the sections SetConfig validates
			if got := store.Sections().Checked(data); slices.Contains(got, "m") != tt.check {
				t.Fatalf("Sections().Checked = %v, want m listed %v", got, tt.check)
			}
			_, err = store.SetConfig(data)
			if tt.check != (err != nil) {
				t.Fatalf("checked %v, want %v: %v", err != nil, tt.check, err)
			}
			if err != nil && !strings.Contains(err.Error(), "module m: m values do not match") {
				t.Fatalf("the error names no module: %v", err)
			}
			// discovery's check judges the section the store holds
			// whatever the flags: a bad one, or none without the
			// required key
			if err := store.CheckModuleConfig("m"); err == nil || !strings.Contains(err.Error(), "module m:") {
				t.Fatalf("CheckModuleConfig: %v", err)
			}
		})
	}
}
