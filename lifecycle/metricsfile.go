package lifecycle

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/addonops/addon-operator/hookmetrics"
	"github.com/addonops/addon-operator/loader"
)

// hookFileLimit bounds a file a hook hands back (docs/security.md).
const hookFileLimit = 1 << 20

// readHookFile reads a file a hook wrote, at most hookFileLimit bytes.
// TODO(merge): point at hooks.go's bounded reader (no symlinks,
// O_NONBLOCK, regular files only) once it lands.
var readHookFile = func(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, hookFileLimit+1))
	if err != nil {
		return nil, err
	}
	if len(b) > hookFileLimit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, hookFileLimit)
	}
	return b, nil
}

// readHookMetrics parses a run's METRICS_PATH file; a bad operation fails
// the run, naming its line (docs/operator.md, "Metrics from hooks").
func readHookMetrics(path string) ([]hookmetrics.Op, error) {
	b, err := readHookFile(path)
	if err != nil {
		return nil, fmt.Errorf("METRICS_PATH: %w", err)
	}
	ops, err := hookmetrics.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("METRICS_PATH: %w", err)
	}
	return ops, nil
}

// applyHookMetrics applies a successful run's operations with the hook's
// hook and module labels; series beyond the hook's limit are dropped,
// logged and counted.
func (r *runner) applyHookMetrics(h *loader.Hook, ops []hookmetrics.Op, logger *slog.Logger) error {
	if len(ops) == 0 {
		return nil
	}
	o := hookmetrics.Owner{Module: h.Module, Hook: hookLabel(h)}
	dropped, err := r.metrics.hookStore.Apply(o, ops)
	if err != nil {
		return fmt.Errorf("hook %s: METRICS_PATH: %w", h.Name, err)
	}
	if dropped > 0 {
		r.metrics.hookDroppedSeries.WithLabelValues(o.Module, o.Hook).Add(float64(dropped))
		logger.Warn("hook metrics dropped: the hook owns its limit of series", "dropped", dropped, "limit", hookmetrics.DefaultLimit)
	}
	return nil
}
