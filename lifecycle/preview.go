package lifecycle

import (
	"context"
	"log/slog"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
)

// Preview is what a tree would install, computed without a cluster.
type Preview struct {
	// Enabled lists the enabled modules in run order.
	Enabled []string
	// Manifests are the rendered charts of enabled modules, by module.
	Manifests map[string]string
	// NotEvaluated lists the modules whose enabled script was not run
	// (counted as enabled when their flag is on).
	NotEvaluated []string
}

// RenderPreview loads a tree, resolves its enabled modules from the values
// files and the given ConfigMap data and renders each enabled module's
// chart with its values. Hooks never run, so values that hooks would add
// are absent; enabled scripts run only with execHooks (the loader then
// also runs the hooks' --config): a preview of an untrusted ref runs
// none of its code.
func RenderPreview(ctx context.Context, ld *loader.Loader, root, modulesDir, globalHooksDir string, config map[string]string, namespace string, execHooks bool, logger *slog.Logger) (*Preview, error) {
	model, err := ld.Load(ctx, root, modulesDir, globalHooksDir)
	if err != nil {
		return nil, err
	}
	store, err := admit(model, config)
	if err != nil {
		return nil, err
	}
	p := &Preview{Manifests: map[string]string{}}
	if execHooks {
		// the hook runner alone, with no cluster: enabled scripts only
		cfg := Config{Logger: logger}.withDefaults()
		trees := &treeHolder{}
		r := newRunner(cfg, newMetrics(cfg.Registry, trees.revisionInfo), trees, newModuleRegistry(), nil)
		var failed map[string]error
		if p.Enabled, failed, _, err = r.resolveEnabled(ctx, model, store, func(string) bool { return false }); err != nil {
			return nil, err
		}
		// a preview has no previous state to keep: a failed script fails it
		for _, m := range model.Modules {
			if err := failed[m.Name]; err != nil {
				return nil, err
			}
		}
	} else {
		for _, m := range model.Modules {
			if !store.Enabled(m.Key) {
				continue
			}
			if m.EnabledScript != "" {
				p.NotEvaluated = append(p.NotEvaluated, m.Name)
			}
			p.Enabled = append(p.Enabled, m.Name)
		}
	}
	for _, name := range p.Enabled {
		m := model.Module(name)
		if !m.HasChart {
			continue
		}
		vals, err := store.HelmValues(m.Key)
		if err != nil {
			return nil, err
		}
		manifest, err := kube.Render(ctx, kube.Release{Name: name, Key: m.Key, ChartDir: m.Dir, Exclude: m.BatchExecutables(), Values: vals}, namespace)
		if err != nil {
			return nil, err
		}
		p.Manifests[name] = manifest
	}
	return p, nil
}
