package loader

import (
	"context"
	"fmt"
	"path/filepath"

	"golang.org/x/sync/errgroup"

	"github.com/addonops/addon-operator/internal/executor"
)

// configureHooks runs every hook with --config (cached by content) through
// a bounded pool and parses the result.
func (l *Loader) configureHooks(ctx context.Context, use *cacheUse, m *Model) error {
	if !l.runConfigs {
		return nil
	}
	var all []*Hook
	all = append(all, m.Global.Hooks...)
	for _, mod := range m.Modules {
		all = append(all, mod.Hooks...)
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(l.parallel)
	for _, h := range all {
		g.Go(func() error {
			cfg, err := l.hookConfig(ctx, use, h)
			if err != nil {
				return fileErr(h.Path, err)
			}
			h.Config = cfg
			return nil
		})
	}
	return g.Wait()
}

// hookConfig is one hook's config: from the cache, or from running it with
// --config, its output bounded.
func (l *Loader) hookConfig(ctx context.Context, use *cacheUse, h *Hook) (*HookConfig, error) {
	// by the hook's key, not its absolute path, so a new git revision (a
	// new directory) reuses the configs of unchanged hooks
	cacheKey := h.Key()
	if cfg, ok := l.configs.get(use, cacheKey); ok {
		return cfg, nil
	}
	out, err := executor.Run(ctx, executor.Command{
		Path:          h.Path,
		Args:          []string{"--config"},
		Dir:           filepath.Dir(h.Path),
		Env:           []string{"WORKING_DIR=" + h.WorkingDir},
		Timeout:       l.configTimeout,
		CaptureStdout: true,
		// the executor keeps a head and a tail of this size each: output
		// that fits both whole is exactly what was printed, anything
		// longer comes back longer than maxConfig, cut, and is refused
		OutputLimit: (l.maxConfig + 1) / 2,
		Logger:      l.logger.With("hook", h.Name, "phase", "config"),
	})
	if err != nil {
		return nil, fmt.Errorf("run with --config: %w", err)
	}
	if len(out) > l.maxConfig {
		return nil, fmt.Errorf("--config printed more than %d bytes, over the limit for a hook config (refused rather than cut)", l.maxConfig)
	}
	cfg, err := ParseHookConfig(out, h.Module == "")
	if err != nil {
		return nil, fmt.Errorf("hook config: %w", err)
	}
	l.configs.put(use, cacheKey, cfg)
	return cfg, nil
}
