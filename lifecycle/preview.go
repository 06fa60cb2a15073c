package lifecycle

import (
	"context"
	"log/slog"
	"path/filepath"
	"regexp"

	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"

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
	// Failures are the modules that did not render, in run order: a
	// preview renders every other module rather than stop at the first
	// (a failing module hides nothing else).
	Failures []PreviewFailure
}

// PreviewFailure is one module that did not render: its enabled script
// failed, or its values or chart did.
type PreviewFailure struct {
	Module string `json:"module"`
	File   string `json:"file"`
	Error  string `json:"error"`
}

// helmFile finds the template a Helm error names ("template:
// name/templates/x.yaml:3:4: ..."), as a path in the module's directory.
var helmFile = regexp.MustCompile(`template: [^/\s:]+/([^\s:]+):`)

func renderFailure(m *loader.Module, err error) PreviewFailure {
	file := m.Dir
	if sub := helmFile.FindStringSubmatch(err.Error()); sub != nil {
		file = filepath.Join(m.Dir, filepath.FromSlash(sub[1]))
	}
	return PreviewFailure{Module: m.Name, File: file, Error: err.Error()}
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
	store, err := runstate.Admit(model, config, nil)
	if err != nil {
		return nil, err
	}
	p := &Preview{Manifests: map[string]string{}}
	if execHooks {
		// the hook runner alone, with no cluster: enabled scripts only
		cfg := Config{Logger: logger}.withDefaults()
		trees := &runstate.Trees{}
		r := newRunner(cfg, metrics.New(cfg.Registry, trees.RevisionInfo), trees, runstate.NewModules(), nil)
		var failed map[string]error
		if p.Enabled, failed, _, err = r.resolveEnabled(ctx, model, store, func(string) bool { return false }); err != nil {
			return nil, err
		}
		// a preview has no previous state to keep: a failed script is the
		// module's failure
		for _, m := range model.Modules {
			if err := failed[m.Name]; err != nil {
				p.Failures = append(p.Failures, PreviewFailure{Module: m.Name, File: m.EnabledScript, Error: err.Error()})
			}
		}
	} else {
		for _, m := range model.Modules {
			if !store.Enabled(m.Key) {
				continue
			}
			// the check discovery makes of a module it enables; one whose
			// enabled script did not run may be disabled, and then its
			// section refuses nothing (docs/operator.md, "Values")
			if m.EnabledScript != "" {
				p.NotEvaluated = append(p.NotEvaluated, m.Name)
			} else if err := store.CheckModuleConfig(m.Key); err != nil {
				return nil, err
			}
			p.Enabled = append(p.Enabled, m.Name)
		}
	}
	defer func() {
		// a file in the repository, not in a preview's checkout that is gone
		for i, f := range p.Failures {
			if rel, err := filepath.Rel(root, f.File); root != "" && err == nil && filepath.IsLocal(rel) {
				p.Failures[i].File = rel
			}
		}
	}()
	for _, name := range p.Enabled {
		m := model.Module(name)
		if !m.HasChart {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		vals, err := store.ModuleValues(m.Key, p.Enabled)
		if err != nil {
			p.Failures = append(p.Failures, PreviewFailure{Module: name, File: filepath.Join(m.Dir, "values.yaml"), Error: err.Error()})
			continue
		}
		manifest, err := kube.Render(ctx, kube.Release{Name: name, Key: m.Key, ChartDir: m.Dir, Files: model.ChartFS(m), Exclude: m.BatchExecutables(), Values: vals}, namespace)
		if err != nil {
			p.Failures = append(p.Failures, renderFailure(m, err))
			continue
		}
		p.Manifests[name] = manifest
	}
	return p, nil
}
