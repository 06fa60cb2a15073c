package lifecycle

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/values"
)

// Preview is what a tree would install, computed without a cluster.
type Preview struct {
	// Enabled lists the enabled modules in run order.
	Enabled []string
	// Manifests are the rendered charts of enabled modules, by module.
	Manifests map[string]string
}

// RenderPreview loads a tree, resolves its enabled modules from the values
// files and the given ConfigMap data (running enabled scripts) and renders
// each enabled module's chart with its values. Other hooks do not run, so
// values that hooks would add are absent.
func RenderPreview(ctx context.Context, ld *loader.Loader, root, modulesDir, globalHooksDir string, config map[string]string, namespace string, logger *slog.Logger) (*Preview, error) {
	model, err := ld.Load(ctx, root, modulesDir, globalHooksDir)
	if err != nil {
		return nil, err
	}
	store, _, err := values.NewStore(model.Values)
	if err != nil {
		return nil, err
	}
	if _, err := store.SetConfig(config); err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	o := New(Config{Logger: logger}, nil, nil, ld)
	o.model, o.store = model, store
	enabled, err := o.resolveEnabled(ctx, model, store)
	if err != nil {
		return nil, err
	}
	p := &Preview{Enabled: enabled, Manifests: map[string]string{}}
	for _, name := range enabled {
		m := model.Module(name)
		if !m.HasChart {
			continue
		}
		vals, err := store.HelmValues(m.Key)
		if err != nil {
			return nil, err
		}
		manifest, err := kube.Render(ctx, kube.Release{Name: name, ChartDir: m.Dir, Values: vals}, namespace)
		if err != nil {
			return nil, err
		}
		p.Manifests[name] = manifest
	}
	return p, nil
}
