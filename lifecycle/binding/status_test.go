package binding

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
)

// The running monitors are listed for /status by module, hook and binding,
// and their snapshots are reported at scrape time.
func TestWatchStatusAndSnapshotMetrics(t *testing.T) {
	t.Parallel()
	cms := loader.KubernetesBinding{Name: "cms", Kind: "ConfigMap", KeepFullObjectsInMemory: true}
	pods := loader.KubernetesBinding{Name: "pods", Kind: "Pod", Queue: "q"}
	h := hook("", "h.sh", loader.HookConfig{Kubernetes: []loader.KubernetesBinding{pods, cms}})
	f := newFixture(t, model([]*loader.Hook{h}, nil), false)
	f.source.objects = map[string][]kube.ObjectEvent{h.Name + ":cms": {obj(loader.EventAdded, "a"), obj(loader.EventAdded, "b")}}
	if err := f.bs.Synchronize(t.Context(), []*loader.Hook{h}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range f.bs.WatchStatus() {
		got = append(got, w.Hook+" "+w.Binding+" "+w.Kind+" "+strings.Repeat("o", w.Objects))
	}
	if strings.Join(got, "|") != "h.sh cms ConfigMap oo|h.sh pods Pod " {
		t.Fatalf("watch status %q", got)
	}
	const want = `
# HELP addon_operator_kube_snapshot_objects Objects in each kubernetes binding's snapshot (module is empty for a global hook).
# TYPE addon_operator_kube_snapshot_objects gauge
addon_operator_kube_snapshot_objects{binding="cms",hook="h.sh",module="",queue="main"} 2
addon_operator_kube_snapshot_objects{binding="pods",hook="h.sh",module="",queue="q"} 0
`
	if err := testutil.CollectAndCompare(f.bs.Collector(), strings.NewReader(want), "addon_operator_kube_snapshot_objects"); err != nil {
		t.Fatal(err)
	}
}
