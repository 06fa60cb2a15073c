package kube

import (
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The module directory is the chart: its values.yaml gives Helm defaults
// for keys outside the module's section and for subcharts, while the
// module's section comes only from the values the operator hands over.
func TestChartValuesAreHelmDefaults(t *testing.T) {
	t.Parallel()
	const moduleValues = "demo:\n  v: from-values-yaml\n  removed: by-a-patch\nextra: hello\nsub:\n  greeting: hi\n"
	const parent = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  v: {{ .Values.demo.v | quote }}
  removed: {{ .Values.demo.removed | default "absent" | quote }}
  extra: {{ .Values.extra | quote }}
`
	const sub = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-sub\ndata:\n  greeting: {{ .Values.greeting | quote }}\n"
	withChartFile := t.TempDir()
	writeFiles(t, withChartFile, map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: demo\nversion: 0.1.0\n", "values.yaml": moduleValues,
		"templates/cm.yaml":            parent,
		"charts/sub/Chart.yaml":        "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"charts/sub/values.yaml":       "greeting: default\n",
		"charts/sub/templates/cm.yaml": sub,
	})
	templatesOnly := t.TempDir()
	writeFiles(t, templatesOnly, map[string]string{
		"values.yaml": moduleValues, "templates/cm.yaml": parent,
		"charts/sub/Chart.yaml":        "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"charts/sub/templates/cm.yaml": sub,
	})
	for _, tc := range []struct{ name, dir string }{{"chart-file", withChartFile}, {"templates-only", templatesOnly}} {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			h := newHelm(t, ns)
			r := Release{Name: tc.name, Key: "demo", ChartDir: tc.dir, Values: map[string]any{"demo": map[string]any{"v": "merged"}, "global": map[string]any{}}}
			if _, err := h.Upgrade(t.Context(), r); err != nil {
				t.Fatal(err)
			}
			cm, err := client.CoreV1().ConfigMaps(ns).Get(t.Context(), tc.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"v": "merged", "removed": "absent", "extra": "hello"}
			for k, v := range want {
				if cm.Data[k] != v {
					t.Errorf("%s = %q, want %q", k, cm.Data[k], v)
				}
			}
			subCM, err := client.CoreV1().ConfigMaps(ns).Get(t.Context(), tc.name+"-sub", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if subCM.Data["greeting"] != "hi" {
				t.Errorf("subchart greeting = %q, want the parent's default %q", subCM.Data["greeting"], "hi")
			}
		})
	}
}

// Helm edits the chart it installs (a disabled subchart is dropped from
// it); the cached chart must not remember that, so turning the subchart
// on again deploys it.
func TestSubchartConditionTogglesBack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"Chart.yaml":                   "apiVersion: v2\nname: toggle\nversion: 0.1.0\ndependencies:\n  - name: sub\n    version: 0.1.0\n    condition: sub.enabled\n",
		"templates/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
		"charts/sub/Chart.yaml":        "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"charts/sub/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-sub\n",
	})
	ns := namespace(t)
	h := newHelm(t, ns)
	for _, on := range []bool{false, true, false, true} {
		r := Release{Name: "toggle", Key: "toggle", ChartDir: dir, ChartHash: "fixed", Values: map[string]any{"sub": map[string]any{"enabled": on}, "global": map[string]any{}}}
		if _, err := h.Upgrade(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		_, err := client.CoreV1().ConfigMaps(ns).Get(t.Context(), "toggle-sub", metav1.GetOptions{})
		if (err == nil) != on {
			t.Fatalf("sub.enabled=%v: subchart ConfigMap present = %v", on, err == nil)
		}
	}
}
