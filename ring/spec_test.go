package ring

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func readYAML(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func TestParseFixture(t *testing.T) {
	var specs map[string]Spec
	readYAML(t, "policies.yaml", &specs)
	want := map[string]Policy{
		"canary":                  {Ring: 0},
		"all-of-ring-0":           {Ring: 1},
		"two-of-ring-1-with-soak": {Ring: 2, Healthy: Need{2}, Soak: 30 * time.Minute},
		"listed":                  {Ring: 1, Healthy: Need{2}, Previous: []string{"canary-a", "canary-b", "canary-c"}},
	}
	if len(specs) != len(want) {
		t.Fatalf("read %d policies", len(specs))
	}
	for name, s := range specs {
		got, err := Parse(s)
		if err != nil || !reflect.DeepEqual(got, want[name]) {
			t.Errorf("%s: Parse = %+v, %v; want %+v", name, got, err, want[name])
		}
	}
}

func TestParseRefuses(t *testing.T) {
	var cases []struct {
		Spec Spec
		Want string
	}
	readYAML(t, "refused.yaml", &cases)
	for _, c := range cases {
		if _, err := Parse(c.Spec); err == nil || !strings.Contains(err.Error(), c.Want) {
			t.Errorf("Parse(%+v) = %v, want an error containing %q", c.Spec, err, c.Want)
		}
	}
}

func TestNeedJSON(t *testing.T) {
	for in, want := range map[string]Need{`"all"`: All, `"ALL"`: All, `2`: {2}, `"3"`: {3}} {
		var n Need
		if err := json.Unmarshal([]byte(in), &n); err != nil || n != want {
			t.Errorf("%s: %+v, %v; want %+v", in, n, err, want)
		}
	}
	for _, in := range []string{`0`, `-1`, `"most"`, `true`, `"0"`, `1.5`} {
		var n Need
		if err := json.Unmarshal([]byte(in), &n); err == nil || !strings.Contains(err.Error(), "healthy: ") {
			t.Errorf("%s: err = %v", in, err)
		}
	}
	b, _ := json.Marshal(Spec{Ring: 1})
	b2, _ := json.Marshal(Spec{Ring: 2, Healthy: Need{2}})
	if string(b) != `{"ring":1}` || string(b2) != `{"ring":2,"healthy":2}` {
		t.Errorf("marshalled %s and %s", b, b2)
	}
}
