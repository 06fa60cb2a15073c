package hookrun

import (
	"fmt"
	"log/slog"

	"github.com/addonops/addon-operator/hookmetrics"
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/loader"
)

// readHookMetrics parses a run's METRICS_PATH file, read as every file a
// hook hands back (readResultFile); a bad operation fails the run, naming
// its line (docs/operator.md, "Metrics from hooks").
func readHookMetrics(hookName, path string) ([]hookmetrics.Op, error) {
	b, err := readResultFile(hookName, "METRICS_PATH", path)
	if err != nil {
		return nil, err
	}
	ops, err := hookmetrics.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("hook %s: METRICS_PATH: %w", hookName, err)
	}
	return ops, nil
}

// checkHookMetrics refuses, before anything of the run is applied, the
// operations the hook metrics store would refuse (a changed type, a name
// that collides with a histogram's series).
func (r *Runner) checkHookMetrics(hookName string, ops []hookmetrics.Op) error {
	if err := r.opts.Metrics.HookStore.Check(ops); err != nil {
		return fmt.Errorf("hook %s: METRICS_PATH: %w", hookName, err)
	}
	return nil
}

// applyHookMetrics applies a successful run's operations with the hook's
// hook and module labels; series beyond the hook's limit are dropped,
// logged and counted.
func (r *Runner) applyHookMetrics(h *loader.Hook, ops []hookmetrics.Op, logger *slog.Logger) error {
	if len(ops) == 0 {
		return nil
	}
	o := hookmetrics.Owner{Module: h.Module, Hook: metrics.HookLabel(h), Budget: metrics.HookBudget(h)}
	dropped, err := r.opts.Metrics.HookStore.Apply(o, ops)
	if err != nil {
		return fmt.Errorf("hook %s: METRICS_PATH: %w", h.Name, err)
	}
	if dropped > 0 {
		r.opts.Metrics.HookDroppedSeries.WithLabelValues(o.Module, o.Hook).Add(float64(dropped))
		logger.Warn("hook metrics dropped: the hook's executable spent its budget, or the hook left the tree",
			"dropped", dropped, "series", hookmetrics.DefaultLimit, "bytes", hookmetrics.DefaultBytes)
	}
	return nil
}
