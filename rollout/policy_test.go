package rollout

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// sections is a Config over YAML's addon-operator sections.
type sections map[string]json.RawMessage

func (s sections) Operator(name string, into any) (bool, error) {
	b, ok := s[name]
	if !ok {
		return false, nil
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	return true, dec.Decode(into)
}

func parseYAML(t *testing.T, y string) sections {
	t.Helper()
	var s sections
	if err := yaml.Unmarshal([]byte(y), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		forge   bool
		summary string
		err     string
	}{
		{name: "none", yaml: "{}", summary: "none: every revision applies at once"},
		{name: "ring 1", yaml: "rollout: {ring: 1, healthy: 2, soak: 30m, previousRing: [eu-1, eu-2], holdRollbacks: true}", forge: true,
			summary: "ring 1 after 2 of ring 0 healthy (eu-1, eu-2), soak 30m0s, rollbacks held too"},
		{name: "ring 0 needs no forge", yaml: "rollout: {ring: 0}", summary: "ring 0"},
		{name: "ring 1 needs a forge", yaml: "rollout: {ring: 1}",
			err: "cluster.yaml: key addon-operator.rollout.ring: 1: a ring after ring 0 waits for the statuses the previous ring posts on the forge, and none can be read"},
		{name: "bad soak", yaml: "rollout: {ring: 1, soak: soon}", forge: true,
			err: `cluster.yaml: key addon-operator.rollout.soak: "soon": want a duration such as 30m or 2h`},
		{name: "windows", yaml: `windows: [{name: office, kind: allow, schedule: "0 9 * * 1-5", duration: 8h, timeZone: Europe/Berlin}]`,
			summary: `allow window "office" "0 9 * * 1-5" for 8h (Europe/Berlin)`},
		{name: "bad window", yaml: `windows: [{name: office, kind: maybe, schedule: "0 9 * * 1-5", duration: 8h}]`,
			err: `cluster.yaml: key addon-operator.windows: window "office": kind: "maybe": want allow or deny`},
		{name: "a window that never opens", yaml: `windows: [{name: never, kind: allow, schedule: "0 9 30 2 *", duration: 1h}]`,
			err: "cluster.yaml: key addon-operator.windows: window \"never\": schedule:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(parseYAML(t, tt.yaml), "cluster.yaml", tt.forge, t0)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Summary(); got != tt.summary {
				t.Errorf("summary %q, want %q", got, tt.summary)
			}
		})
	}
}
