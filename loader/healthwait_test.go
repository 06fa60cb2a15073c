package loader

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The health-wait annotation of a module's Chart.yaml: "true", a duration,
// absent or "false"; a value Helm would refuse, or neither, refuses the
// tree naming the file; a Chart.yaml that does not parse names its line.
func TestHealthWaitAnnotation(t *testing.T) {
	tests := []struct {
		name, chart string
		want        HealthWait
		wantErr     string
	}{
		{name: "absent", chart: "apiVersion: v2\nname: m\nversion: 0.1.0\n"},
		{name: "true", chart: "apiVersion: v2\nname: m\nversion: 0.1.0\nannotations:\n  addonops.io/health-wait: \"true\"\n", want: HealthWait{On: true}},
		{name: "duration", chart: "apiVersion: v2\nname: m\nversion: 0.1.0\nannotations:\n  addonops.io/health-wait: 90s\n", want: HealthWait{On: true, Timeout: 90 * time.Second}},
		{name: "false", chart: "apiVersion: v2\nname: m\nversion: 0.1.0\nannotations:\n  addonops.io/health-wait: \"false\"\n"},
		{name: "unquoted", chart: "apiVersion: v2\nname: m\nversion: 0.1.0\nannotations:\n  addonops.io/health-wait: true\n", wantErr: "quote it"},
		{name: "neither", chart: "apiVersion: v2\nname: m\nversion: 0.1.0\nannotations:\n  addonops.io/health-wait: soon\n", wantErr: `"soon" is neither`},
		{name: "over an hour", chart: "apiVersion: v2\nname: m\nversion: 0.1.0\nannotations:\n  addonops.io/health-wait: 8760h\n", wantErr: "over the longest wait"},
		{name: "not the word true", chart: "apiVersion: v2\nname: m\nversion: 0.1.0\nannotations:\n  addonops.io/health-wait: \"1\"\n", wantErr: `"1" is neither`},
		{name: "negative", chart: "apiVersion: v2\nname: m\nversion: 0.1.0\nannotations:\n  addonops.io/health-wait: -1m\n", wantErr: "positive duration"},
		{name: "not YAML", chart: "apiVersion: v2\nname: [m\n", wantErr: "line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "modules", "010-m", "Chart.yaml"), tt.chart, 0o644)
			writeFile(t, filepath.Join(dir, "modules", "010-m", "values.yaml"), "m: {}\n", 0o644)
			model, err := New(WithLogger(quietLogger())).Load(t.Context(), dir, filepath.Join(dir, "modules"), filepath.Join(dir, "global-hooks"))
			if tt.wantErr != "" {
				file := filepath.Join(dir, "modules", "010-m", "Chart.yaml")
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), file) {
					t.Fatalf("err = %v, want %q naming %s", err, tt.wantErr, file)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := model.Module("m").HealthWait; got != tt.want {
				t.Fatalf("HealthWait = %+v, want %+v", got, tt.want)
			}
		})
	}
}
