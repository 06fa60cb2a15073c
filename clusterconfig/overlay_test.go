package clusterconfig

import (
	"context"
	"reflect"
	"testing"
)

func TestOverlay(t *testing.T) {
	git := &Config{
		Data: map[string]string{
			"global":       "registry:\n  host: git.example.com\n  mirrors: [a]\n",
			"fooEnabled":   "true",
			"foo":          "replicas: 2\n",
			"barDrift":     "warn",
			"bazEnabled":   "false",
			"listSection":  "items: [1, 2]\n",
			"scalarOnGit":  "7",
			"sameAsConfig": "x: 1\n",
		},
		Origin: map[string][]string{
			"global": {"clusters/common.yaml", "clusters/a/config.yaml"}, "fooEnabled": {"clusters/a/config.yaml"},
			"foo": {"clusters/a/config.yaml"}, "barDrift": {"clusters/common.yaml"}, "bazEnabled": {"clusters/common.yaml"},
			"listSection": {"clusters/common.yaml"}, "scalarOnGit": {"clusters/common.yaml"}, "sameAsConfig": {"clusters/common.yaml"},
		},
	}
	for _, tc := range []struct {
		name      string
		cluster   map[string]string
		want      map[string]any
		overrides []Override
	}{
		{
			name:    "nothing in the cluster: git's keys",
			cluster: nil,
			want: map[string]any{
				"global":     map[string]any{"registry": map[string]any{"host": "git.example.com", "mirrors": []any{"a"}}},
				"fooEnabled": true, "foo": map[string]any{"replicas": 2.0}, "barDrift": "warn", "bazEnabled": false,
				"listSection": map[string]any{"items": []any{1.0, 2.0}}, "scalarOnGit": 7.0, "sameAsConfig": map[string]any{"x": 1.0},
			},
		},
		{
			name: "cluster keys git does not set stay; cluster values under git's keys merge below git's",
			cluster: map[string]string{
				"global":       "clusterOnly: 1\nregistry:\n  host: cm.example.com\n  user: me\n",
				"other":        "a: b\n",
				"otherEnabled": "true",
				"fooEnabled":   "false",
				"foo":          "replicas: 2\nextra: e\n",
				"barDrift":     "correct",
				"listSection":  "items: [3]\n",
				"scalarOnGit":  "a: 1\n",
				"sameAsConfig": "x: 1",
			},
			want: map[string]any{
				"global":       map[string]any{"clusterOnly": 1.0, "registry": map[string]any{"host": "git.example.com", "user": "me", "mirrors": []any{"a"}}},
				"other":        map[string]any{"a": "b"},
				"otherEnabled": true,
				"fooEnabled":   true, "foo": map[string]any{"replicas": 2.0, "extra": "e"}, "barDrift": "warn", "bazEnabled": false,
				"listSection": map[string]any{"items": []any{1.0, 2.0}}, "scalarOnGit": 7.0, "sameAsConfig": map[string]any{"x": 1.0},
			},
			overrides: []Override{
				{Key: "barDrift", File: "clusters/common.yaml"},
				{Key: "fooEnabled", File: "clusters/a/config.yaml"},
				{Key: "global", Path: "registry.host", File: "clusters/a/config.yaml"},
				{Key: "listSection", Path: "items", File: "clusters/common.yaml"},
				{Key: "scalarOnGit", File: "clusters/common.yaml"},
			},
		},
		{
			name:      "cluster text that does not parse under a git key is replaced",
			cluster:   map[string]string{"foo": "a: [", "broken": "b: ["},
			want:      nil, // checked below
			overrides: []Override{{Key: "foo", File: "clusters/a/config.yaml"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, overrides, err := Overlay(tc.cluster, git)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(overrides, tc.overrides) {
				t.Errorf("overrides: got %v, want %v", overrides, tc.overrides)
			}
			if tc.want == nil {
				if data["broken"] != "b: [" || data["foo"] != git.Data["foo"] {
					t.Errorf("data: %q", data)
				}
				return
			}
			if got := parsed(t, data); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("data:\n got %v\nwant %v", got, tc.want)
			}
		})
	}
	if data, ov, err := Overlay(map[string]string{"a": "1"}, nil); err != nil || ov != nil || data["a"] != "1" {
		t.Errorf("nil config: %v %v %v", data, ov, err)
	}
	if got := (Override{Key: "global", Path: "registry.host"}).String(); got != "global.registry.host" {
		t.Errorf("String: %s", got)
	}
}

// An override names the layer that set its path, not the last one that
// set its key.
func TestOverlayNamesTheLayer(t *testing.T) {
	root := tree(t, map[string]string{
		"common.yaml":  "global:\n  registry:\n    host: common.example.com\n  level: info\n",
		"cluster.yaml": "global:\n  clusterName: a\n  level: debug\n",
	})
	c, err := Load(context.Background(), root, Settings{Cluster: "a", Layers: []Layer{{Path: "common.yaml"}, {Path: "cluster.yaml"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, overrides, err := Overlay(map[string]string{"global": "registry:\n  host: cm\nlevel: warn\nclusterName: b\n"}, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []Override{
		{Key: "global", Path: "clusterName", File: "cluster.yaml"},
		{Key: "global", Path: "level", File: "cluster.yaml"},
		{Key: "global", Path: "registry.host", File: "common.yaml"},
	}
	if !reflect.DeepEqual(overrides, want) {
		t.Errorf("overrides:\n got %v\nwant %v", overrides, want)
	}
}
