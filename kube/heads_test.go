package kube

import (
	"testing"
)

// The snapshot keeps heads of release records (heads.go); a write that
// starts from one, a maintenance label here, still stores the whole
// record: the chart, its values and the values given stay for Helm
// (`helm get values`, a rollback).
func TestLabelFromHeadKeepsTheWholeRecord(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	h := newHelm(t, ns)
	r := Release{Name: "demo", ChartDir: testChart(t, goodManifest), Values: map[string]any{"demo": map[string]any{"v": "1"}, "global": map[string]any{"enabledModules": []any{"demo"}}}}
	if _, err := h.Upgrade(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	// the next run decides on the list's heads
	if _, err := h.Releases(t.Context()); err != nil {
		t.Fatal(err)
	}
	if head, cached, fresh := h.snapshot.get("demo", h.now()); !cached || !fresh || head.Config != nil || len(head.Chart.Templates) != 0 || head.Manifest == "" {
		t.Fatalf("snapshot holds %+v (cached %v, fresh %v); want a head with its manifest", head, cached, fresh)
	}
	r.Maintenance = true
	if res, err := h.Upgrade(t.Context(), r); err != nil || res.Reason != "maintenance" {
		t.Fatalf("maintenance: %+v, %v", res, err)
	}
	full, err := h.cfg.Releases.Last("demo")
	if err != nil {
		t.Fatal(err)
	}
	if full.Labels[LabelMaintenance] != "true" {
		t.Fatalf("labels %v: want %s", full.Labels, LabelMaintenance)
	}
	if full.Config["demo"] == nil || len(full.Chart.Templates) == 0 || full.Chart.Metadata == nil {
		t.Fatalf("the record lost its values or chart: config %v, %d templates", full.Config, len(full.Chart.Templates))
	}
}
