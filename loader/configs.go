package loader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
			var notBatch string
			if h.image {
				hooks, why, err := l.batchHooks(ctx, use, h)
				if err != nil {
					return fileErr(h.file(), err)
				}
				if why == "" {
					h.batch, h.isBatch = hooks, true
					return nil
				}
				notBatch = why
			}
			cfg, err := l.hookConfig(ctx, use, h)
			if err != nil {
				if notBatch != "" {
					err = fmt.Errorf("%w (nor is it a batch hook: %s)", err, notBatch)
				}
				return fileErr(h.file(), err)
			}
			h.Config = cfg
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	var err error
	// a global settings check has no module to check: the global section
	// is judged by its schemas alone (docs/operator.md, "Settings checks")
	if m.Global.Hooks, _, err = expandBatches(m.Global.Hooks); err != nil {
		return err
	}
	for _, mod := range m.Modules {
		var check *Hook
		if mod.Hooks, check, err = expandBatches(mod.Hooks); err != nil {
			return err
		}
		if check != nil {
			mod.SettingsCheck, mod.settingsCheckInTree = check.Path, check.inTree
		}
	}
	return nil
}

// expandBatches puts each batch executable's hooks in its place and
// returns the one that answers `hook check`. A module (or the
// global hooks directory) has at most one readiness hook, as in the
// original, and at most one settings check.
func expandBatches(hooks []*Hook) ([]*Hook, *Hook, error) {
	out := make([]*Hook, 0, len(hooks))
	readiness := ""
	var check *Hook
	for _, h := range hooks {
		if !h.isBatch {
			out = append(out, h)
			continue
		}
		if h.settingsCheck {
			if check != nil {
				return nil, nil, fileErr(h.file(), fmt.Errorf("a second settings check (the first is in %s): a module has at most one", check.file()))
			}
			check = h
		}
		for _, b := range h.batch {
			if len(b.Args) == 2 && b.Args[1] == "ready" {
				if readiness != "" {
					return nil, nil, fileErr(h.file(), fmt.Errorf("a second readiness hook (the first is in %s): a module has at most one", readiness))
				}
				readiness = h.file()
			}
		}
		out = append(out, h.batch...)
	}
	return out, check, nil
}

// hookConfig is one hook's config: from the cache, or from running it with
// --config, its output bounded. It also completes the hook's Hash with the
// config, so a config that changed changes the hook's key.
func (l *Loader) hookConfig(ctx context.Context, use *cacheUse, h *Hook) (*HookConfig, error) {
	// by the hook's place and contents, not its absolute path, so a new git
	// revision (a new directory) reuses the configs of unchanged hooks; and
	// with the hash of every file its --config may read (its module's
	// directory, or the global hooks directory), so a hook that prints a
	// sibling file runs again when that file changes
	cacheKey := h.Module + "\x00" + h.Name + "\x00" + h.Hash + "\x00" + h.scope
	c, ok := l.configs.get(use, cacheKey)
	if !ok {
		var err error
		if c, err = l.runConfig(ctx, h); err != nil {
			return nil, err
		}
		l.configs.put(use, cacheKey, c)
	}
	sum := sha256.Sum256([]byte(h.Hash + "\x00" + c.hash))
	h.Hash = hex.EncodeToString(sum[:])
	return c.cfg, nil
}

// runConfig runs the hook with --config and parses what it printed.
func (l *Loader) runConfig(ctx context.Context, h *Hook) (cachedConfig, error) {
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
		return cachedConfig{}, fmt.Errorf("run with --config: %w", err)
	}
	if len(out) > l.maxConfig {
		return cachedConfig{}, fmt.Errorf("--config printed more than %d bytes, over the limit for a hook config (refused rather than cut)", l.maxConfig)
	}
	cfg, err := ParseHookConfig(out, h.Module == "")
	if err != nil {
		return cachedConfig{}, fmt.Errorf("hook config: %w", err)
	}
	sum := sha256.Sum256(out)
	return cachedConfig{cfg: cfg, hash: hex.EncodeToString(sum[:])}, nil
}
