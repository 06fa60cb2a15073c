package clusterconfig

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// The operator's own settings (OperatorKey) merge across layers as a
// section does, are not ConfigMap data, are read into a struct, and are
// refused where no code reads them.
func TestOperatorSettings(t *testing.T) {
	type rollout struct {
		Ring    int    `json:"ring"`
		Healthy string `json:"healthy,omitempty"`
		Soak    string `json:"soak,omitempty"`
	}
	root := tree(t, map[string]string{
		"common.yaml":  "addon-operator:\n  rollout:\n    healthy: all\n    soak: 10m\nglobal:\n  a: 1\n",
		"cluster.yaml": "addon-operator:\n  rollout:\n    ring: 1\n",
		"typo.yaml":    "addon-operator:\n  rolout:\n    ring: 1\n",
		"field.yaml":   "addon-operator:\n  rollout:\n    rang: 1\n",
		"scalar.yaml":  "addon-operator: 3\n",
	})
	s := Settings{Cluster: "a", Layers: []Layer{{Path: "common.yaml"}, {Path: "cluster.yaml"}}, OperatorSections: []string{"rollout", "windows"}}
	c, err := Load(context.Background(), root, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Data[OperatorKey]; ok || len(c.Data) != 1 {
		t.Fatalf("the operator's settings are ConfigMap data: %v", c.Data)
	}
	var r rollout
	if ok, err := c.Operator("rollout", &r); !ok || err != nil || !reflect.DeepEqual(r, rollout{Ring: 1, Healthy: "all", Soak: "10m"}) {
		t.Fatalf("rollout: %v %v %+v", ok, err, r)
	}
	if !reflect.DeepEqual(c.OperatorFiles, []string{"common.yaml", "cluster.yaml"}) {
		t.Errorf("files %v", c.OperatorFiles)
	}
	var w []any
	if ok, err := c.Operator("windows", &w); ok || err != nil {
		t.Errorf("windows: %v %v", ok, err)
	}

	for _, tc := range []struct {
		name, file string
		sections   []string
		want       string
	}{
		{"no reader", "cluster.yaml", nil, "reads none of its own settings"},
		{"an unknown section", "typo.yaml", []string{"rollout"}, "addon-operator.rolout: not a setting of the operator; want one of rollout"},
		{"not a mapping", "scalar.yaml", []string{"rollout"}, "want a mapping"},
	} {
		_, err := Load(context.Background(), root, Settings{Cluster: "a", Layers: []Layer{{Path: tc.file}}, OperatorSections: tc.sections})
		var ce *Error
		if !errors.As(err, &ce) || ce.File != tc.file || ce.Key != OperatorKey || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	c, err = Load(context.Background(), root, Settings{Cluster: "a", Layers: []Layer{{Path: "field.yaml"}}, OperatorSections: []string{"rollout"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Operator("rollout", &r); err == nil || !strings.Contains(err.Error(), "field.yaml") || !strings.Contains(err.Error(), "addon-operator.rollout") || !strings.Contains(err.Error(), "rang") {
		t.Errorf("an unknown field: %v", err)
	}
}
