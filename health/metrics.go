package health

import (
	"github.com/prometheus/client_golang/prometheus"
)

// NewCollector exports the tracker's statuses as kube-state-metrics exports
// a phase: one series per status, 1 for the current one and 0 for the
// others (docs/operator.md, "Health").
func NewCollector(t *Tracker) prometheus.Collector { return collector{t} }

type collector struct{ t *Tracker }

var (
	moduleHealthDesc = prometheus.NewDesc("addon_operator_module_health",
		"Health of an enabled module's release objects: 1 for its current status, 0 for the others.", []string{"module", "status"}, nil)
	operatorHealthDesc = prometheus.NewDesc("addon_operator_health",
		"Health of the operator's modules: the worst module status (Degraded, Progressing, Unknown, Healthy), 1 for it and 0 for the others.", []string{"status"}, nil)
)

func (collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- moduleHealthDesc
	ch <- operatorHealthDesc
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	worst := Healthy
	for name, h := range c.t.Modules() {
		for _, s := range Statuses {
			ch <- prometheus.MustNewConstMetric(moduleHealthDesc, prometheus.GaugeValue, one(h.Status == s), name, string(s))
		}
		if rank(h.Status) > rank(worst) {
			worst = h.Status
		}
	}
	for _, s := range Statuses {
		ch <- prometheus.MustNewConstMetric(operatorHealthDesc, prometheus.GaugeValue, one(worst == s), string(s))
	}
}

func one(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
