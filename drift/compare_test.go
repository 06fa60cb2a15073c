package drift

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestCompare: the fixtures of testdata/compare, each a live object, the
// dry-run's result and the paths that differ.
func TestCompare(t *testing.T) {
	files, _ := filepath.Glob("testdata/compare/*.yaml")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			var fx struct {
				Live    map[string]any `json:"live"`
				Applied map[string]any `json:"applied"`
				Want    []string       `json:"want"`
			}
			readFixture(t, f, &fx)
			got := Compare(fx.Live, fx.Applied)
			if len(got) == 0 && len(fx.Want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, fx.Want) {
				t.Fatalf("Compare = %q, want %q", got, fx.Want)
			}
		})
	}
}

// TestPrune: the fixtures of testdata/prune, each an API server field path
// (as a conflict names it) and the object without it.
func TestPrune(t *testing.T) {
	files, _ := filepath.Glob("testdata/prune/*.yaml")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			var fx struct {
				Field  string         `json:"field"`
				Object map[string]any `json:"object"`
				Want   map[string]any `json:"want"`
			}
			readFixture(t, f, &fx)
			if _, err := prune(fx.Object, fx.Field); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fx.Object, fx.Want) {
				t.Fatalf("prune(%s) = %v, want %v", fx.Field, fx.Object, fx.Want)
			}
		})
	}
}

func TestConflictString(t *testing.T) {
	for _, tc := range []struct {
		c    Conflict
		want string
	}{
		{Conflict{Field: ".spec.replicas", Manager: "kube-controller-manager", Subresource: "scale"}, "spec.replicas (kube-controller-manager, /scale)"},
		{Conflict{Field: ".data.a", Manager: "kubectl-edit"}, "data.a (kubectl-edit)"},
	} {
		if got := tc.c.String(); got != tc.want {
			t.Errorf("%#v: got %q, want %q", tc.c, got, tc.want)
		}
	}
}

func readFixture(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestCovers: the precheck that spares a clean object its dry-run.
func TestCovers(t *testing.T) {
	for _, tc := range []struct {
		name          string
		live, desired string
		want          bool
	}{
		{"server-added fields", `{spec: {replicas: 1, strategy: {type: RollingUpdate}}, status: {}}`, `{spec: {replicas: 1}}`, true},
		{"numbers of either parser", `{spec: {ports: [{port: 80, protocol: TCP}]}}`, `{spec: {ports: [{port: 80}]}}`, true},
		{"changed value", `{spec: {image: b}}`, `{spec: {image: a}}`, false},
		{"missing field", `{spec: {}}`, `{spec: {image: a}}`, false},
		{"longer list goes to the dry-run", `{args: [a, b]}`, `{args: [a]}`, false},
		{"normalised quantity goes to the dry-run", `{cpu: 500m}`, `{cpu: 0.5}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var live, desired map[string]any
			if err := yaml.Unmarshal([]byte(tc.live), &live); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal([]byte(tc.desired), &desired); err != nil {
				t.Fatal(err)
			}
			if got := Covers(live, desired); got != tc.want {
				t.Fatalf("Covers = %v, want %v", got, tc.want)
			}
		})
	}
}
