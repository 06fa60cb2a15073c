package metrics

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/addonops/addon-operator/hookmetrics"
	"github.com/addonops/addon-operator/internal/executor"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// HookRun is what one hook run's metrics are labelled with, as the
// original labels them (docs/operator.md, "Metrics").
type HookRun struct {
	Module, Hook string // hook: relative to the module's directory or GLOBAL_HOOKS_DIR
	BindingType  string // onStartup, kubernetes, schedule, beforeHelm, ...
	Activation   string // what started the run (see activationOf)
	Queue        string
	OldName      string // the deprecated metrics' hook label
}

// HookRunOf labels a run of h for the binding named binding.
func HookRunOf(h *loader.Hook, binding string) HookRun {
	r := HookRun{Module: h.Module, Hook: HookLabel(h), BindingType: binding, Queue: queue.MainQueue, OldName: h.Name}
	if h.Config != nil {
		for _, s := range h.Config.Schedules {
			if s.Name == binding {
				r.BindingType, r.Queue = loader.Schedule, s.Queue
			}
		}
		for _, k := range h.Config.Kubernetes {
			if k.Name == binding {
				r.BindingType, r.Queue = loader.Kubernetes, k.Queue
			}
		}
	}
	if r.Queue == "" {
		r.Queue = queue.MainQueue
	}
	r.Activation = activationOf(r.BindingType)
	return r
}

// HookLabel is the original's hook label: a module hook's path from its
// module's directory (hooks/a.sh), a global hook's from GLOBAL_HOOKS_DIR.
func HookLabel(h *loader.Hook) string {
	if h.Module == "" {
		return h.Name
	}
	if i := strings.IndexByte(h.Name, '/'); i >= 0 {
		return h.Name[i+1:]
	}
	return h.Name
}

// activationOf names what started a run of a binding type, in the
// original's event names.
func activationOf(bindingType string) string {
	switch bindingType {
	case loader.OnStartup:
		return "OperatorStartup"
	case loader.BeforeAll, loader.AfterAll:
		return "ReloadAllModules"
	case loader.BeforeHelm, loader.AfterHelm:
		return "ModuleRun"
	case loader.BeforeDeleteHelm, loader.AfterDeleteHelm:
		return "ModuleDelete"
	case loader.Kubernetes:
		return "Kubernetes"
	case loader.Schedule:
		return "Schedule"
	}
	return bindingType
}

// HookRan records a hook run: its duration, its outcome and what the
// kernel accounted to its process. binding is the binding's name (for the
// deprecated metrics, which used it).
func (m *Recorder) HookRan(r HookRun, binding string, took time.Duration, usage *executor.Usage, err error, allowFailure bool) {
	family, labels := m.globalHook, []string{r.Hook, r.BindingType, r.Activation, r.Queue}
	if r.Module != "" {
		family, labels = m.module, append([]string{r.Module}, labels...)
	}
	oldName := r.OldName
	family.seconds.WithLabelValues(labels...).Observe(took.Seconds())
	m.old.hookSeconds.WithLabelValues(oldName, binding).Observe(took.Seconds())
	// every outcome's series exists from the first run, so rate() and
	// alerts see a 0 before the first failure
	errs, allowed, ok := family.errors.WithLabelValues(labels...), family.allowedErrors.WithLabelValues(labels...), family.successes.WithLabelValues(labels...)
	oldErrs, oldAllowed := m.old.hookErrors.WithLabelValues(oldName, binding, r.Module), m.old.hookAllowedErrors.WithLabelValues(oldName, binding, r.Module)
	switch {
	case err == nil:
		ok.Inc()
	case errors.Is(err, context.Canceled):
	case allowFailure:
		allowed.Inc()
		oldAllowed.Inc()
	default:
		errs.Inc()
		oldErrs.Inc()
	}
	if usage != nil && (usage.User > 0 || usage.Sys > 0 || usage.MaxRSSBytes > 0) {
		family.sysCPU.WithLabelValues(labels...).Observe(usage.Sys.Seconds())
		family.userCPU.WithLabelValues(labels...).Observe(usage.User.Seconds())
		family.maxRSS.WithLabelValues(labels...).Set(float64(usage.MaxRSSBytes))
	}
}

// ModuleFailed counts a failed module run or delete.
func (m *Recorder) ModuleFailed(name string, deleting bool) {
	if deleting {
		m.moduleDeleteErrs.WithLabelValues(name).Inc()
	} else {
		m.ModuleRunErrs.WithLabelValues(name).Inc()
	}
	m.old.moduleRunErrors.WithLabelValues(name).Inc()
}

// moduleSeen creates a module's error and conflict series at 0, for rate()
// and alerts.
func (m *Recorder) moduleSeen(name string) {
	m.ModuleRunErrs.WithLabelValues(name)
	m.moduleDeleteErrs.WithLabelValues(name)
	m.ReleaseConflicts.WithLabelValues(name)
	m.old.moduleRunErrors.WithLabelValues(name)
}

func (m *Recorder) HelmUpgraded(module string, activation string, took time.Duration, upgraded bool) {
	m.moduleHelmSeconds.WithLabelValues(module, activation).Observe(took.Seconds())
	m.helmOpSeconds.WithLabelValues(module, activation, "upgrade").Observe(took.Seconds())
	m.old.helmSeconds.WithLabelValues(module).Observe(took.Seconds())
	if upgraded {
		m.HelmUpgrades.WithLabelValues(module).Inc()
		m.old.helmUpgrades.WithLabelValues(module).Inc()
	}
}

func (m *Recorder) Converged(first bool, took time.Duration) {
	activation := "ReloadAllModules"
	if first {
		activation = "OperatorStartup"
	}
	m.convergence.Observe(took.Seconds())
	m.convergenceSeconds.WithLabelValues(activation).Add(took.Seconds())
	m.convergenceTotal.WithLabelValues(activation).Inc()
}

func (m *Recorder) ConfigRefused() {
	m.ConfigValuesErrors.Inc()
	m.old.configErrors.Inc()
}

func (m *Recorder) TreeRefused() {
	m.treeErrors.Inc()
	m.old.treeErrors.Inc()
	m.moduleDiscoverErrs.Inc()
}

func (m *Recorder) KubeEvent(h *loader.Hook, binding string) {
	m.KubeEvents.WithLabelValues(h.Name, binding).Inc()
	m.old.kubeEvents.WithLabelValues(h.Name, binding).Inc()
}

// BindingsOf sets addon_operator_binding_count for a tree's hooks, and
// drops the hook metrics of hooks that left it.
func (m *Recorder) BindingsOf(model *loader.Model) {
	m.retainHookMetrics(model)
	m.bindingCount.Reset()
	count := func(h *loader.Hook) {
		n := 0
		if c := h.Config; c != nil {
			n = len(c.Schedules) + len(c.Kubernetes) + len(c.Orders)
		}
		m.bindingCount.WithLabelValues(h.Module, HookLabel(h)).Set(float64(n))
		m.HookDroppedSeries.WithLabelValues(h.Module, HookLabel(h))
	}
	for _, h := range model.Global.Hooks {
		count(h)
	}
	for _, mod := range model.Modules {
		m.moduleSeen(mod.Name)
		for _, h := range mod.Hooks {
			count(h)
		}
	}
}

// liveTicks increases addon_operator_live_ticks every 10 s of the
// operator's clock until ctx ends.
func (m *Recorder) Tick(ctx context.Context, after func(time.Duration) <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-after(10 * time.Second):
			m.liveTicks.Inc()
		}
	}
}

// EnabledRan records a module's enabled script run as the original does: a
// module hook named "enabled" with binding "enabled"; a failure is also a
// failed module discovery.
func (m *Recorder) EnabledRan(mod *loader.Module, took time.Duration, usage *executor.Usage, err error) {
	r := HookRun{Module: mod.Name, Hook: "enabled", BindingType: "enabled", Activation: "ModuleDiscover", Queue: queue.MainQueue, OldName: mod.DirName + "/enabled"}
	m.HookRan(r, "enabled", took, usage, err, false)
	if err != nil && !errors.Is(err, context.Canceled) {
		m.moduleDiscoverErrs.Inc()
	}
}

// ModuleActivation names what started a module run.
func ModuleActivation(startup bool) string {
	if startup {
		return "OperatorStartup"
	}
	return "ModuleRun"
}

func (m *Recorder) ModuleRan(name string, now func() time.Time, start time.Time) {
	m.moduleRunSeconds.WithLabelValues(name).Observe(now().Sub(start).Seconds())
}

// HookBudget keys a hook's metrics budget by its module and its file
// beneath the hooks directory: a batch executable's hooks share one, a
// hook renamed in its config keeps it, and a new checkout (a new
// directory) does not change it (docs/operator.md, "Metrics from hooks").
func HookBudget(h *loader.Hook) string {
	file, err := filepath.Rel(h.WorkingDir, h.Path)
	if err != nil || h.WorkingDir == "" {
		file = h.Name
	}
	return h.Module + "\x00" + file
}

// retainHookMetrics drops the series of hooks that are not in model, the
// tree now running, and refuses what their runs still in flight write.
func (m *Recorder) retainHookMetrics(model *loader.Model) {
	var hooks []hookmetrics.Hook
	add := func(h *loader.Hook) { hooks = append(hooks, hookmetrics.Hook{Module: h.Module, Hook: HookLabel(h)}) }
	for _, h := range model.Global.Hooks {
		add(h)
	}
	for _, mod := range model.Modules {
		for _, h := range mod.Hooks {
			add(h)
		}
	}
	m.HookStore.Retain(hooks)
}

// stepBuckets are finer than buckets: most steps of a run take well under
// a millisecond.
var stepBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5}

// ObserveStep records one step of a module run
// (addon_operator_module_run_step_seconds): steptime.Observer.
func (m *Recorder) ObserveStep(step string, took time.Duration) {
	o, ok := m.stepObservers.Load(step)
	if !ok {
		o, _ = m.stepObservers.LoadOrStore(step, m.moduleRunStep.WithLabelValues(step))
	}
	o.(prometheus.Observer).Observe(took.Seconds())
}
