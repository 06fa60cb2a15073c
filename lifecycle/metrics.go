package lifecycle

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	moduleRunErrors   *prometheus.CounterVec
	hookErrors        *prometheus.CounterVec
	hookAllowedErrors *prometheus.CounterVec
	queueLength       *prometheus.GaugeVec
	hookSeconds       *prometheus.HistogramVec
	helmSeconds       *prometheus.HistogramVec
	helmUpgrades      *prometheus.CounterVec
	convergence       prometheus.Histogram
	configErrors      prometheus.Counter
	treeErrors        prometheus.Counter
	absentResources   *prometheus.GaugeVec
	kubeEvents        *prometheus.CounterVec
	releaseConflicts  *prometheus.GaugeVec
	maintenance       *prometheus.GaugeVec
}

var revisionInfo = prometheus.NewDesc("addon_operator_git_revision_info",
	"The git revision the operator runs (its model was loaded from it): 1, labelled with the ref it was resolved from and the commit.", []string{"ref", "commit"}, nil)

// revisionCollector reports addon_operator_git_revision_info for the
// adopted revision (nothing without git).
type revisionCollector func() (ref, commit string)

func (c revisionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- revisionInfo }

func (c revisionCollector) Collect(ch chan<- prometheus.Metric) {
	if ref, commit := c(); commit != "" {
		ch <- prometheus.MustNewConstMetric(revisionInfo, prometheus.GaugeValue, 1, ref, commit)
	}
}

func newMetrics(reg prometheus.Registerer, revision revisionCollector) *metrics {
	buckets := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}
	m := &metrics{
		moduleRunErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "addon_operator_module_run_errors", Help: "Failed module runs and deletes.",
		}, []string{"module"}),
		hookErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "addon_operator_hook_errors", Help: "Failed hook runs.",
		}, []string{"hook", "binding", "module"}),
		hookAllowedErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "addon_operator_hook_allowed_errors", Help: "Failed hook runs dropped by allowFailure.",
		}, []string{"hook", "binding", "module"}),
		queueLength: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "addon_operator_tasks_queue_length", Help: "Tasks in each queue, the running one included.",
		}, []string{"queue"}),
		hookSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "addon_operator_hook_run_seconds", Help: "Duration of hook runs.", Buckets: buckets,
		}, []string{"hook", "binding"}),
		helmSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "addon_operator_helm_seconds", Help: "Duration of the Helm step of module runs.", Buckets: buckets,
		}, []string{"module"}),
		helmUpgrades: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "addon_operator_helm_upgrades", Help: "Helm installs and upgrades (skipped unchanged releases not counted).",
		}, []string{"module"}),
		convergence: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "addon_operator_convergence_seconds", Help: "Duration of 'reload all modules' to convergence.", Buckets: buckets,
		}),
		configErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "addon_operator_config_errors", Help: "ConfigMap changes refused as invalid.",
		}),
		treeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "addon_operator_tree_errors", Help: "Changed trees refused (failed to load or to validate).",
		}),
		absentResources: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "addon_operator_modules_absent_resources", Help: "Resources of a module's release missing from the cluster at the last check.",
		}, []string{"module"}),
		kubeEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "addon_operator_kube_events", Help: "Kubernetes events queued for hooks (before compaction).",
		}, []string{"hook", "binding"}),
		releaseConflicts: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "addon_operator_release_conflicts", Help: "1 while a module's release name is taken by a Helm release another tool owns.",
		}, []string{"module"}),
		maintenance: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "addon_operator_module_maintenance", Help: "1 while a module is in maintenance mode (NoResourceReconciliation): its release is left as it is.",
		}, []string{"module"}),
	}
	reg.MustRegister(revision, m.maintenance, m.releaseConflicts, m.kubeEvents, m.moduleRunErrors, m.hookErrors, m.hookAllowedErrors, m.queueLength, m.hookSeconds,
		m.helmSeconds, m.helmUpgrades, m.convergence, m.configErrors, m.treeErrors, m.absentResources)
	return m
}
