package lifecycle

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/addonops/addon-operator/lifecycle/runstate"
)

var (
	moduleFailedDesc = prometheus.NewDesc("addon_operator_module_failed",
		"1 while a module's last run or delete failed (it is retried), 0 otherwise.", []string{"module"}, nil)
	treeRefusedDesc = prometheus.NewDesc("addon_operator_tree_refused",
		"1 while the newest changed tree (revision) is refused because it failed to load or to validate; the operator keeps running the previous one.", nil, nil)
	purgeRefusedDesc = prometheus.NewDesc("addon_operator_purge_refused",
		"1 while the purge guard holds back a revision that would delete too many modules, or the last purge failed.", nil, nil)
)

// stateCollector reports the operator's state at scrape time, for the
// alerts of deploy/monitoring (docs/operator.md, "Monitoring").
type stateCollector struct {
	modules *runstate.Modules
	tree    *treeSteps
	purge   *purgeGuard
}

func (s stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- moduleFailedDesc
	ch <- treeRefusedDesc
	ch <- purgeRefusedDesc
}

func (s stateCollector) Collect(ch chan<- prometheus.Metric) {
	states := s.modules.All()
	failed := make(map[string]bool, len(states))
	for name, st := range states {
		failed[name] = st.State == StateFailed
	}
	treeErr, _ := s.tree.revs.treeStatus()
	tree := treeErr != ""
	_, purge := s.purge.status()
	one := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	for name, f := range failed {
		ch <- prometheus.MustNewConstMetric(moduleFailedDesc, prometheus.GaugeValue, one(f), name)
	}
	ch <- prometheus.MustNewConstMetric(treeRefusedDesc, prometheus.GaugeValue, one(tree))
	ch <- prometheus.MustNewConstMetric(purgeRefusedDesc, prometheus.GaugeValue, one(purge))
}
