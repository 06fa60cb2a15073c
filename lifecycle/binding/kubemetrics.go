package binding

import (
	"encoding/json"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/loader"
)

// kubeLabels are the original's labels of a kubernetes binding's metrics:
// module, hook, binding, queue, kind.
func kubeLabels(h *loader.Hook, b loader.KubernetesBinding) []string {
	q := b.Queue
	if q == "" {
		q = "main"
	}
	return []string{h.Module, metrics.HookLabel(h), b.Name, q, b.Kind}
}

var (
	snapshotObjects = prometheus.NewDesc("addon_operator_kube_snapshot_objects",
		"Objects in each kubernetes binding's snapshot (module is empty for a global hook).", []string{"module", "hook", "binding", "queue"}, nil)
	snapshotBytes = prometheus.NewDesc("addon_operator_kube_snapshot_bytes",
		"Size of each kubernetes binding's snapshot: the JSON of its objects and filter results.", []string{"module", "hook", "binding", "queue"}, nil)
)

// snapshotCollector reports the running bindings' snapshots at scrape
// time, so hook runs pay nothing for it.
type snapshotCollector struct{ kube *kubeMonitors }

func (c snapshotCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- snapshotObjects
	ch <- snapshotBytes
}

func (c snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	hooks := c.kube.list()
	seen := map[string]bool{}
	for _, hm := range hooks {
		for _, bm := range hm.bindings {
			labels := kubeLabels(hm.hook, bm.binding)[:4]
			key := labels[0] + "\x00" + labels[1] + "\x00" + labels[2]
			if seen[key] {
				continue // the same hook in two trees' monitors, while one replaces the other
			}
			seen[key] = true
			size := 0
			snap := bm.monitor.Snapshot()
			for _, ev := range snap {
				b, _ := json.Marshal(snapshotItem(bm.binding, ev))
				size += len(b)
			}
			ch <- prometheus.MustNewConstMetric(snapshotObjects, prometheus.GaugeValue, float64(len(snap)), labels...)
			ch <- prometheus.MustNewConstMetric(snapshotBytes, prometheus.GaugeValue, float64(size), labels...)
		}
	}
}
