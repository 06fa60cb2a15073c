package loader

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/internal/testtree"
)

func TestLoadClusterConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		config  string
		wantKey string // a key Model.Config.Data has
		wantErr string // the file an error names
	}{
		{name: "sections and flags", config: "echoServer:\n  replicas: 2\nechoServerEnabled: true\n", wantKey: "echoServerEnabled"},
		{name: "a module the tree lacks", config: "nginxEnabled: true\n", wantErr: "clusters/a/config.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := testtree.New(t, map[string]string{
				"modules/010-echo-server/Chart.yaml":  "apiVersion: v2\nname: echo-server\nversion: 0.1.0\n",
				"modules/010-echo-server/values.yaml": "echoServer: {}\n",
				"clusters/a/config.yaml":              tc.config,
			})
			l := New(WithClusterConfig(clusterconfig.Settings{Cluster: "a"}))
			m, err := l.Load(context.Background(), root, filepath.Join(root, "modules"), filepath.Join(root, "global-hooks"))
			if tc.wantErr != "" {
				var ce *clusterconfig.Error
				if !errors.As(err, &ce) || ce.File != tc.wantErr {
					t.Fatalf("want a clusterconfig error naming %s, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := m.Config.Data[tc.wantKey]; !ok {
				t.Errorf("Config.Data lacks %s: %v", tc.wantKey, m.Config.Data)
			}
		})
	}
	// Without the option there is no config, and no file is needed.
	root := testtree.New(t, map[string]string{"modules/010-a/Chart.yaml": "apiVersion: v2\nname: a\nversion: 0.1.0\n"})
	m, err := New().Load(context.Background(), root, filepath.Join(root, "modules"), "")
	if err != nil || m.Config != nil {
		t.Fatalf("no option: %v, %v", m, err)
	}
}
