package lifecycle

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/addonops/addon-operator/internal/executor"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// hookRun is what one hook run's metrics are labelled with, as the
// original labels them (docs/operator.md, "Metrics").
type hookRun struct {
	module, hook string // hook: relative to the module's directory or GLOBAL_HOOKS_DIR
	bindingType  string // onStartup, kubernetes, schedule, beforeHelm, ...
	activation   string // what started the run (see activationOf)
	queue        string
	oldName      string // the deprecated metrics' hook label
}

// hookRunOf labels a run of h for the binding named binding.
func hookRunOf(h *loader.Hook, binding string) hookRun {
	r := hookRun{module: h.Module, hook: hookLabel(h), bindingType: binding, queue: queue.MainQueue, oldName: h.Name}
	if h.Config != nil {
		for _, s := range h.Config.Schedules {
			if s.Name == binding {
				r.bindingType, r.queue = loader.Schedule, s.Queue
			}
		}
		for _, k := range h.Config.Kubernetes {
			if k.Name == binding {
				r.bindingType, r.queue = loader.Kubernetes, k.Queue
			}
		}
	}
	if r.queue == "" {
		r.queue = queue.MainQueue
	}
	r.activation = activationOf(r.bindingType)
	return r
}

// hookLabel is the original's hook label: a module hook's path from its
// module's directory (hooks/a.sh), a global hook's from GLOBAL_HOOKS_DIR.
func hookLabel(h *loader.Hook) string {
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

// hookRan records a hook run: its duration, its outcome and what the
// kernel accounted to its process. binding is the binding's name (for the
// deprecated metrics, which used it).
func (m *metrics) hookRan(r hookRun, binding string, took time.Duration, usage *executor.Usage, err error, allowFailure bool) {
	family, labels := m.globalHook, []string{r.hook, r.bindingType, r.activation, r.queue}
	if r.module != "" {
		family, labels = m.module, append([]string{r.module}, labels...)
	}
	oldName := r.oldName
	family.seconds.WithLabelValues(labels...).Observe(took.Seconds())
	m.old.hookSeconds.WithLabelValues(oldName, binding).Observe(took.Seconds())
	// every outcome's series exists from the first run, so rate() and
	// alerts see a 0 before the first failure
	errs, allowed, ok := family.errors.WithLabelValues(labels...), family.allowedErrors.WithLabelValues(labels...), family.successes.WithLabelValues(labels...)
	oldErrs, oldAllowed := m.old.hookErrors.WithLabelValues(oldName, binding, r.module), m.old.hookAllowedErrors.WithLabelValues(oldName, binding, r.module)
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

// moduleFailed counts a failed module run or delete.
func (m *metrics) moduleFailed(name string, deleting bool) {
	if deleting {
		m.moduleDeleteErrs.WithLabelValues(name).Inc()
	} else {
		m.moduleRunErrs.WithLabelValues(name).Inc()
	}
	m.old.moduleRunErrors.WithLabelValues(name).Inc()
}

// moduleSeen creates a module's error and conflict series at 0, for rate()
// and alerts.
func (m *metrics) moduleSeen(name string) {
	m.moduleRunErrs.WithLabelValues(name)
	m.moduleDeleteErrs.WithLabelValues(name)
	m.releaseConflicts.WithLabelValues(name)
	m.old.moduleRunErrors.WithLabelValues(name)
}

func (m *metrics) helmUpgraded(module string, activation string, took time.Duration, upgraded bool) {
	m.moduleHelmSeconds.WithLabelValues(module, activation).Observe(took.Seconds())
	m.helmOpSeconds.WithLabelValues(module, activation, "upgrade").Observe(took.Seconds())
	m.old.helmSeconds.WithLabelValues(module).Observe(took.Seconds())
	if upgraded {
		m.helmUpgrades.WithLabelValues(module).Inc()
		m.old.helmUpgrades.WithLabelValues(module).Inc()
	}
}

func (m *metrics) converged(first bool, took time.Duration) {
	activation := "ReloadAllModules"
	if first {
		activation = "OperatorStartup"
	}
	m.convergence.Observe(took.Seconds())
	m.convergenceSeconds.WithLabelValues(activation).Add(took.Seconds())
	m.convergenceTotal.WithLabelValues(activation).Inc()
}

func (m *metrics) configRefused() {
	m.configValuesErrors.Inc()
	m.old.configErrors.Inc()
}

func (m *metrics) treeRefused() {
	m.treeErrors.Inc()
	m.old.treeErrors.Inc()
	m.moduleDiscoverErrs.Inc()
}

func (m *metrics) kubeEvent(h *loader.Hook, binding string) {
	m.kubeEvents.WithLabelValues(h.Name, binding).Inc()
	m.old.kubeEvents.WithLabelValues(h.Name, binding).Inc()
}

// bindingsOf sets addon_operator_binding_count for a tree's hooks, and
// drops the hook metrics of hooks that left it.
func (m *metrics) bindingsOf(model *loader.Model) {
	m.retainHookMetrics(model)
	m.bindingCount.Reset()
	count := func(h *loader.Hook) {
		n := 0
		if c := h.Config; c != nil {
			n = len(c.Schedules) + len(c.Kubernetes) + len(c.Orders)
		}
		m.bindingCount.WithLabelValues(h.Module, hookLabel(h)).Set(float64(n))
		m.hookDroppedSeries.WithLabelValues(h.Module, hookLabel(h))
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
func (m *metrics) tick(ctx context.Context, after func(time.Duration) <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-after(10 * time.Second):
			m.liveTicks.Inc()
		}
	}
}

// enabledRan records a module's enabled script run as the original does: a
// module hook named "enabled" with binding "enabled"; a failure is also a
// failed module discovery.
func (m *metrics) enabledRan(mod *loader.Module, took time.Duration, usage *executor.Usage, err error) {
	r := hookRun{module: mod.Name, hook: "enabled", bindingType: "enabled", activation: "ModuleDiscover", queue: queue.MainQueue, oldName: mod.DirName + "/enabled"}
	m.hookRan(r, "enabled", took, usage, err, false)
	if err != nil && !errors.Is(err, context.Canceled) {
		m.moduleDiscoverErrs.Inc()
	}
}

// moduleActivation names what started a module run.
func moduleActivation(startup bool) string {
	if startup {
		return "OperatorStartup"
	}
	return "ModuleRun"
}

func (m *metrics) moduleRan(name string, now func() time.Time, start time.Time) {
	m.moduleRunSeconds.WithLabelValues(name).Observe(now().Sub(start).Seconds())
}
