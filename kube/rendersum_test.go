package kube

import (
	"testing"
)

// A release whose chart and values are those of its last render is not
// rendered again: a chart that renders differently each time (random
// values) is unchanged while its inputs are, and upgraded when they change.
func TestHelmRendersChangedInputsOnly(t *testing.T) {
	t.Parallel()
	h := newHelm(t, namespace(t))
	random := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  v: {{ .Values.demo.v | quote }}\n  nonce: {{ randAlphaNum 16 | quote }}\n"
	r := Release{Name: "demo", ChartDir: testChart(t, random), ChartHash: "chart-1", Values: map[string]any{"demo": map[string]any{"v": "1"}, "global": map[string]any{}}}
	for i, c := range []struct {
		v, chartHash string
		upgraded     bool
	}{
		{"1", "chart-1", true}, // installed
		{"1", "chart-1", false},
		{"2", "chart-1", true},
		{"2", "chart-1", false},
		{"2", "chart-2", true}, // the chart's content changed
		{"2", "chart-2", false},
	} {
		r.Values["demo"], r.ChartHash = map[string]any{"v": c.v}, c.chartHash
		res, err := h.Upgrade(t.Context(), r)
		if err != nil || res.Upgraded != c.upgraded {
			t.Fatalf("run %d (v=%s, chart %s): %+v, %v; want upgraded %t", i, c.v, c.chartHash, res, err, c.upgraded)
		}
	}
}

func TestRenderInputs(t *testing.T) {
	t.Parallel()
	base := func() Release {
		return Release{Name: "demo", ChartDir: "/m/demo", ChartHash: "h", Key: "demo", Exclude: []string{"hooks/x"},
			Values: map[string]any{"demo": map[string]any{"a": 1, "b": []any{"x"}}, "global": map[string]any{}}}
	}
	want, known := renderInputs(base(), "ns")
	if !known {
		t.Fatal("the base release's inputs are not known")
	}
	for _, c := range []struct {
		name  string
		edit  func(*Release) string
		same  bool
		known bool
	}{
		{"same", func(*Release) string { return "ns" }, true, true},
		{"values rebuilt in another order", func(r *Release) string {
			r.Values = map[string]any{"global": map[string]any{}, "demo": map[string]any{"b": []any{"x"}, "a": 1}}
			return "ns"
		}, true, true},
		{"a value", func(r *Release) string { r.Values["demo"].(map[string]any)["a"] = 2; return "ns" }, false, true},
		{"namespace", func(*Release) string { return "other" }, false, true},
		{"chart hash", func(r *Release) string { r.ChartHash = "h2"; return "ns" }, false, true},
		{"chart dir", func(r *Release) string { r.ChartDir = "/m2/demo"; return "ns" }, false, true},
		{"excluded files", func(r *Release) string { r.Exclude = nil; return "ns" }, false, true},
		{"values key", func(r *Release) string { r.Key = "other"; return "ns" }, false, true},
		{"release name", func(r *Release) string { r.Name = "other"; return "ns" }, false, true},
		{"no chart hash", func(r *Release) string { r.ChartHash = ""; return "ns" }, false, false},
		{"values that do not encode", func(r *Release) string { r.Values["f"] = func() {}; return "ns" }, false, false},
	} {
		r := base()
		ns := c.edit(&r)
		got, known := renderInputs(r, ns)
		if known != c.known || (known && (got == want) != c.same) {
			t.Errorf("%s: known %t, same %t; want %t, %t", c.name, known, got == want, c.known, c.same)
		}
	}
}
