package lifecycle

import (
	"log/slog"

	"github.com/addonops/addon-operator/lifecycle/hookrun"
	"github.com/addonops/addon-operator/values"
)

// The hook runner lives in lifecycle/hookrun; these names stay for cmd
// and the rest of lifecycle.

// ObjectPatcher applies the object operations hooks write to
// KUBERNETES_PATCH_PATH (hookrun.ObjectPatcher).
type ObjectPatcher = hookrun.ObjectPatcher

// newRunner builds the hook runner from the operator's Config.
func newRunner(cfg Config, opts hookrun.Options) *hookrun.Runner {
	opts.Logger, opts.Now, opts.HookTimeout, opts.TempDir, opts.ObjectPatcher = cfg.Logger, cfg.Now, cfg.HookTimeout, cfg.TempDir, cfg.ObjectPatcher
	return hookrun.New(opts)
}

// logDropped logs temporary values patch operations that no longer apply
// (their path is gone) and were dropped rather than wedge their module.
func logDropped(logger *slog.Logger, why string, dropped []values.DroppedOp) {
	for _, d := range dropped {
		logger.Warn("temporary values patch operation dropped: "+why, "section", d.Section, "hook", d.Hook, "op", d.Op, "path", d.Path, "reason", d.Reason)
	}
}
