package health

import (
	"os"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// deploymentFixture is a Deployment as the API server sends it, with its
// status and managedFields (decoded as the watches decode: integers as
// int64).
func deploymentFixture(tb testing.TB) map[string]any {
	tb.Helper()
	b, err := os.ReadFile("testdata/deployment.json")
	if err != nil {
		tb.Fatal(err)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(b, &obj); err != nil {
		tb.Fatal(err)
	}
	return obj
}

// BenchmarkSummarize is the watch's filter on a Deployment-sized object
// (docs/benchmarks.md, "Drift checks").
func BenchmarkSummarize(b *testing.B) {
	obj := deploymentFixture(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = Summarize(obj)
	}
}

// The fingerprint in the watch's summary changes with what an object says
// (spec, labels, data) and not with what the API server and controllers
// write beside it (status, resourceVersion, managedFields, generation), nor
// with how a number was decoded.
func TestFingerprint(t *testing.T) {
	t.Parallel()
	fp := func(edit func(obj map[string]any)) uint64 {
		obj := deploymentFixture(t)
		if edit != nil {
			edit(obj)
		}
		return Summarize(obj).(summary).Fingerprint
	}
	meta := func(obj map[string]any) map[string]any { return obj["metadata"].(map[string]any) }
	spec := func(obj map[string]any) map[string]any { return obj["spec"].(map[string]any) }
	container := func(obj map[string]any) map[string]any {
		return spec(obj)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	}
	base := fp(nil)
	for _, tc := range []struct {
		name    string
		edit    func(obj map[string]any)
		changed bool
	}{
		{"status", func(o map[string]any) { o["status"].(map[string]any)["readyReplicas"] = int64(1) }, false},
		{"status removed", func(o map[string]any) { delete(o, "status") }, false},
		{"resourceVersion", func(o map[string]any) { meta(o)["resourceVersion"] = "999999" }, false},
		{"managedFields", func(o map[string]any) { meta(o)["managedFields"] = []any{} }, false},
		{"generation", func(o map[string]any) { meta(o)["generation"] = int64(4) }, false},
		{"a number decoded as float64", func(o map[string]any) { spec(o)["replicas"] = float64(2) }, false},
		{"image", func(o map[string]any) { container(o)["image"] = "registry.example/web:hand" }, true},
		{"replicas", func(o map[string]any) { spec(o)["replicas"] = int64(3) }, true},
		{"replicas as a string", func(o map[string]any) { spec(o)["replicas"] = "2" }, true},
		{"a label", func(o map[string]any) { meta(o)["labels"].(map[string]any)["team"] = "a" }, true},
		{"an annotation's value", func(o map[string]any) { meta(o)["annotations"].(map[string]any)["meta.helm.sh/release-name"] = "x" }, true},
		{"args reordered", func(o map[string]any) {
			c := container(o)
			args := c["args"].([]any)
			c["args"] = []any{args[1], args[0]}
		}, true},
		{"a ConfigMap's data in a new top-level key", func(o map[string]any) { o["data"] = map[string]any{"k": "v"} }, true},
		{"a key moved between maps", func(o map[string]any) {
			l := meta(o)["labels"].(map[string]any)
			delete(l, "app.kubernetes.io/managed-by")
			meta(o)["annotations"].(map[string]any)["app.kubernetes.io/managed-by"] = "Helm"
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fp(tc.edit) != base; got != tc.changed {
				t.Errorf("fingerprint changed = %v, want %v", got, tc.changed)
			}
		})
	}
	if fp(nil) != base {
		t.Fatal("the fingerprint of one object differs between two calls")
	}
}

// BenchmarkFingerprint is the fingerprint's part of Summarize.
func BenchmarkFingerprint(b *testing.B) {
	obj := deploymentFixture(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = fingerprint(obj)
	}
}
