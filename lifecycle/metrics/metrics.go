package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/addonops/addon-operator/hookmetrics"
)

// metrics are the operator's own metrics on /metrics (docs/operator.md,
// "Metrics"): the original addon-operator's names with their labels and
// types, ours where it has none, and, for one release, our former names
// marked DEPRECATED in their help. hookStore holds what hooks write to
// METRICS_PATH, served apart on /metrics/hooks.
type Recorder struct {
	// the original's names
	bindingCount       *GaugeVec
	ConfigValuesErrors prometheus.Counter
	globalHook, module hookRunMetrics
	moduleDiscoverErrs prometheus.Counter
	ModuleRunErrs      *CounterVec
	moduleDeleteErrs   *CounterVec
	moduleRunSeconds   *HistogramVec
	moduleHelmSeconds  *HistogramVec
	helmOpSeconds      *HistogramVec
	convergenceSeconds *CounterVec
	convergenceTotal   *CounterVec
	QueueLength        *GaugeVec
	TaskWait           *CounterVec
	liveTicks          prometheus.Counter
	KubeJqSeconds      *HistogramVec
	KubeEventSeconds   *HistogramVec
	QueueActionSeconds *HistogramVec

	// ours
	convergence       prometheus.Histogram
	HelmUpgrades      *CounterVec
	treeErrors        prometheus.Counter
	KubeEvents        *CounterVec
	AbsentResources   *GaugeVec
	DriftedObjects    *GaugeVec
	HealthWaits       *CounterVec
	ReleaseConflicts  *GaugeVec
	Maintenance       *GaugeVec
	ConfigDrift       *GaugeVec
	HookDroppedSeries *CounterVec
	moduleRunStep     *HistogramVec
	stepObservers     sync.Map // step → prometheus.Observer of moduleRunStep

	// deprecated: our former names, served for one release
	old struct {
		moduleRunErrors, hookErrors, hookAllowedErrors, helmUpgrades, kubeEvents *CounterVec
		hookSeconds, helmSeconds                                                 *HistogramVec
		configErrors, treeErrors                                                 prometheus.Counter
	}

	HookStore    *hookmetrics.Store
	HookRegistry *prometheus.Registry

	// Compact are the compact families (series.go), apart from the
	// registry New is given
	Compact Compact
}

// Compact are the compact families of a Recorder: /metrics writes them
// to a text scrape itself (Handler).
type Compact struct {
	registry *prometheus.Registry
	families []compactFamily
}

// describeOnly describes the compact families in the registry New is
// given, and collects nothing there: a collector of that registry under
// one of their names is refused when it registers, as it was when they
// were registered there.
type describeOnly []compactFamily

func (d describeOnly) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range d {
		c.Describe(ch)
	}
}

func (describeOnly) Collect(chan<- prometheus.Metric) {}

// Gatherer is reg, given to New, with the compact families: every metric
// of the operator, as /metrics serves them.
func (c Compact) Gatherer(reg prometheus.Gatherer) prometheus.Gatherer {
	return prometheus.Gatherers{reg, c.registry}
}

// hookRunMetrics are one family of the original's hook run metrics
// (global_hook_run_* or module_hook_run_*).
type hookRunMetrics struct {
	seconds, sysCPU, userCPU         *HistogramVec
	errors, allowedErrors, successes *CounterVec
	maxRSS                           *GaugeVec
}

var revisionInfo = prometheus.NewDesc("addon_operator_git_revision_info",
	"The git revision the operator runs (its model was loaded from it): 1, labelled with the ref it was resolved from and the commit.", []string{"ref", "commit"}, nil)

// RevisionFunc reports addon_operator_git_revision_info for the
// adopted revision (nothing without git).
type RevisionFunc func() (ref, commit string)

func (c RevisionFunc) Describe(ch chan<- *prometheus.Desc) { ch <- revisionInfo }

func (c RevisionFunc) Collect(ch chan<- prometheus.Metric) {
	if ref, commit := c(); commit != "" {
		ch <- prometheus.MustNewConstMetric(revisionInfo, prometheus.GaugeValue, 1, ref, commit)
	}
}

var buckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

const deprecated = "DEPRECATED, removed in the next release: use "

// builder makes metrics and remembers them for registration: the
// compact families apart.
type builder struct {
	all     []prometheus.Collector
	compact []compactFamily
}

func (b *builder) add(c prometheus.Collector) { b.all = append(b.all, c) }

func (b *builder) addCompact(c compactFamily) { b.compact = append(b.compact, c) }

func (b *builder) counter(name, help string, labels ...string) *CounterVec {
	c := newCounterVec(name, help, labels, time.Now)
	b.addCompact(c)
	return c
}

func (b *builder) gauge(name, help string, labels ...string) *GaugeVec {
	g := newGaugeVec(name, help, labels)
	b.addCompact(g)
	return g
}

func (b *builder) histogram(name, help string, bk []float64, labels ...string) *HistogramVec {
	h := newHistogramVec(name, help, bk, labels, time.Now)
	b.addCompact(h)
	return h
}

func (b *builder) counter0(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	b.add(c)
	return c
}

func (b *builder) HookRun(prefix, what string, labels []string) hookRunMetrics {
	return hookRunMetrics{
		seconds:       b.histogram(prefix+"_seconds", "Duration of "+what+" runs.", buckets, labels...),
		errors:        b.counter(prefix+"_errors_total", "Failed "+what+" runs (without allowFailure).", labels...),
		allowedErrors: b.counter(prefix+"_allowed_errors_total", "Failed "+what+" runs that allowFailure let pass.", labels...),
		successes:     b.counter(prefix+"_success_total", "Successful "+what+" runs.", labels...),
		sysCPU:        b.histogram(prefix+"_sys_cpu_seconds", "System CPU time of "+what+" runs (the hook's process).", buckets, labels...),
		userCPU:       b.histogram(prefix+"_user_cpu_seconds", "User CPU time of "+what+" runs (the hook's process).", buckets, labels...),
		maxRSS:        b.gauge(prefix+"_max_rss_bytes", "Peak resident memory of the last "+what+" run (the hook's process).", labels...),
	}
}

func New(reg prometheus.Registerer, revision RevisionFunc) *Recorder {
	b := &builder{}
	m := &Recorder{}
	hookLabels := []string{"hook", "binding", "activation", "queue"}
	m.bindingCount = b.gauge("addon_operator_binding_count", "Bindings of each hook (module is empty for a global hook).", "module", "hook")
	m.ConfigValuesErrors = b.counter0("addon_operator_config_values_errors_total", "ConfigMap changes refused as invalid.")
	m.globalHook = b.HookRun("addon_operator_global_hook_run", "global hook", hookLabels)
	m.module = b.HookRun("addon_operator_module_hook_run", "module hook", append([]string{"module"}, hookLabels...))
	m.moduleDiscoverErrs = b.counter0("addon_operator_module_discover_errors_total", "Failed module discoveries: an enabled script failed, or a changed tree was refused.")
	m.ModuleRunErrs = b.counter("addon_operator_module_run_errors_total", "Failed module runs.", "module")
	m.moduleDeleteErrs = b.counter("addon_operator_module_delete_errors_total", "Failed module deletes.", "module")
	m.moduleRunSeconds = b.histogram("addon_operator_module_run_seconds", "Duration of module runs (hooks and Helm).", buckets, "module")
	m.moduleHelmSeconds = b.histogram("addon_operator_module_helm_seconds", "Duration of the Helm upgrade of module runs.", buckets, "module", "activation")
	m.helmOpSeconds = b.histogram("addon_operator_helm_operation_seconds", "Duration of Helm operations.", buckets, "module", "activation", "operation")
	m.convergenceSeconds = b.counter("addon_operator_convergence_seconds", "Seconds spent in 'reload all modules' until convergence; activation=OperatorStartup is the first.", "activation")
	m.convergenceTotal = b.counter("addon_operator_convergence_total", "Completed 'reload all modules' convergences.", "activation")
	m.QueueLength = b.gauge("addon_operator_tasks_queue_length", "Tasks in each queue, the running one included.", "queue")
	m.TaskWait = b.counter("addon_operator_task_wait_in_queue_seconds_total", "Seconds tasks waited in their queue before their first attempt.", "module", "hook", "binding", "queue")
	m.liveTicks = b.counter0("addon_operator_live_ticks", "Increases every 10 seconds while the operator's loop runs.")
	kubeLabels := []string{"module", "hook", "binding", "queue", "kind"}
	m.KubeJqSeconds = b.histogram("addon_operator_kube_jq_filter_duration_seconds", "Duration of jqFilter runs.", buckets, kubeLabels...)
	m.KubeEventSeconds = b.histogram("addon_operator_kube_event_duration_seconds", "Duration of handling a kubernetes event (queueing the hook run).", buckets, kubeLabels...)
	m.QueueActionSeconds = b.histogram("addon_operator_tasks_queue_action_duration_seconds", "Duration of queue operations.",
		[]float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1}, "queue_name", "queue_action")

	m.convergence = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "addon_operator_convergence_duration_seconds", Help: "Duration of 'reload all modules' to convergence.", Buckets: buckets,
	})
	b.add(m.convergence)
	m.HelmUpgrades = b.counter("addon_operator_helm_upgrades_total", "Helm installs and upgrades (skipped unchanged releases not counted).", "module")
	m.treeErrors = b.counter0("addon_operator_tree_errors_total", "Changed trees refused (failed to load or to validate).")
	m.KubeEvents = b.counter("addon_operator_kube_events_total", "Kubernetes events queued for hooks (before compaction).", "hook", "binding")
	m.AbsentResources = b.gauge("addon_operator_modules_absent_resources", "Resources of a module's release missing from the cluster at the last check.", "module")
	m.DriftedObjects = b.gauge("addon_operator_module_drifted_objects", "Objects of a module's release that differ from the chart, in the fields it sets, at the last drift check.", "module")
	m.HealthWaits = b.counter("addon_operator_health_waits_total", "Health waits that ended, by how: healthy, degraded, timeout or skipped.", "module", "result")
	m.ReleaseConflicts = b.gauge("addon_operator_release_conflicts", "1 while a module's release name is taken by a Helm release another tool owns.", "module")
	m.Maintenance = b.gauge("addon_operator_module_maintenance", "1 while a module is in maintenance mode (NoResourceReconciliation): its release is left as it is.", "module")
	m.ConfigDrift = b.gauge("addon_operator_config_drift", "Values under a ConfigMap key that the config in git replaces (config drift, not applied): one per overridden path; 0 for a key git sets without drift.", "key")
	m.HookDroppedSeries = b.counter("addon_operator_hook_metrics_dropped_series_total",
		"New series a hook wrote to METRICS_PATH beyond its limit, dropped (module is empty for a global hook).", "module", "hook")
	m.moduleRunStep = b.histogram("addon_operator_module_run_step_seconds",
		"Wall time of each step of module runs (docs/performance.md, \"Where a module run's time goes\"); the steps of one run add up to it.",
		stepBuckets, "step")

	m.old.moduleRunErrors = b.counter("addon_operator_module_run_errors", deprecated+"addon_operator_module_run_errors_total and addon_operator_module_delete_errors_total.", "module")
	m.old.hookErrors = b.counter("addon_operator_hook_errors", deprecated+"addon_operator_{global,module}_hook_run_errors_total.", "hook", "binding", "module")
	m.old.hookAllowedErrors = b.counter("addon_operator_hook_allowed_errors", deprecated+"addon_operator_{global,module}_hook_run_allowed_errors_total.", "hook", "binding", "module")
	m.old.hookSeconds = b.histogram("addon_operator_hook_run_seconds", deprecated+"addon_operator_{global,module}_hook_run_seconds.", buckets, "hook", "binding")
	m.old.helmSeconds = b.histogram("addon_operator_helm_seconds", deprecated+"addon_operator_module_helm_seconds.", buckets, "module")
	m.old.helmUpgrades = b.counter("addon_operator_helm_upgrades", deprecated+"addon_operator_helm_upgrades_total.", "module")
	m.old.kubeEvents = b.counter("addon_operator_kube_events", deprecated+"addon_operator_kube_events_total.", "hook", "binding")
	m.old.configErrors = b.counter0("addon_operator_config_errors", deprecated+"addon_operator_config_values_errors_total.")
	m.old.treeErrors = b.counter0("addon_operator_tree_errors", deprecated+"addon_operator_tree_errors_total.")

	reg.MustRegister(append(b.all, revision, describeOnly(b.compact))...)
	m.Compact = Compact{registry: prometheus.NewRegistry(), families: b.compact}
	for _, c := range b.compact {
		m.Compact.registry.MustRegister(c)
	}
	m.HookStore = hookmetrics.New(hookmetrics.Limits{})
	m.HookRegistry = prometheus.NewRegistry()
	m.HookRegistry.MustRegister(m.HookStore)
	return m
}
