package preview

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/lifecycle/hookrun"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/secretfile"
	"github.com/addonops/addon-operator/values"
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
	Failures []Failure
	// ConfigFiles are the cluster's config files in the tree, when the
	// loader reads them (loader.WithClusterConfig), in layer order.
	ConfigFiles []string
	// Overrides are the values of Options.Config that the config in git
	// replaces: config drift, not applied (docs/operator.md, "Config in
	// git").
	Overrides []clusterconfig.Override
}

// Failure is one module that did not render: its enabled script failed,
// or its values or chart did.
type Failure struct {
	Module string `json:"module"`
	File   string `json:"file"`
	Error  string `json:"error"`
}

// Options say which tree a preview renders and how.
type Options struct {
	// Loader loads the tree (its options decide whether hooks' --config
	// runs and the tree root alias); required.
	Loader *loader.Loader
	// Root bounds links in the tree ("": each directory bounds itself);
	// ModulesDir (a list, filepath.ListSeparator) and GlobalHooksDir are
	// the tree's directories.
	Root, ModulesDir, GlobalHooksDir string
	// Config is the ConfigMap data the tree is admitted against; the
	// cluster's config in the tree, when the loader reads it, is laid
	// over it as the operator lays it (clusterconfig.Overlay).
	Config map[string]string
	// Namespace the manifests are rendered for.
	Namespace string
	// ExecHooks runs the modules' enabled scripts; off, none runs and
	// modules with one are NotEvaluated.
	ExecHooks bool
	// HookTimeout bounds an enabled script (default 10m).
	HookTimeout time.Duration
	// ShowSecrets keeps the data of Secrets in Manifests; off, their
	// values are Redacted (RedactSecrets).
	ShowSecrets bool
	Logger      *slog.Logger // default slog.Default()
}

// helmFile finds the template a Helm error names ("template:
// name/templates/x.yaml:3:4: ..."), as a path in the module's directory.
var helmFile = regexp.MustCompile(`template: [^/\s:]+/([^\s:]+):`)

func renderFailure(m *loader.Module, err error) Failure {
	file := m.Dir
	if sub := helmFile.FindStringSubmatch(err.Error()); sub != nil {
		file = filepath.Join(m.Dir, filepath.FromSlash(sub[1]))
	}
	return Failure{Module: m.Name, File: file, Error: err.Error()}
}

// Render loads a tree, resolves its enabled modules from the values files
// and the given ConfigMap data and renders each enabled module's chart
// with its values. Hooks never run, so values that hooks would add are
// absent; enabled scripts run only with ExecHooks (the loader then also
// runs the hooks' --config): a preview of an untrusted ref runs none of
// its code.
func Render(ctx context.Context, opts Options) (*Preview, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	model, err := opts.Loader.Load(ctx, opts.Root, opts.ModulesDir, opts.GlobalHooksDir)
	if err != nil {
		return nil, err
	}
	// values decrypted with a key are hidden in errors and manifests
	// unless ShowSecrets (docs/operator.md, "Previews")
	var red *values.Redactor
	if !opts.ShowSecrets {
		red = values.NewRedactor()
		model.Redact(red)
	}
	p, err := render(ctx, opts, model)
	if err != nil {
		return nil, redactedError{err: err, msg: red.Text(err.Error())}
	}
	for i := range p.Failures {
		p.Failures[i].Error = red.Text(p.Failures[i].Error)
	}
	for name, manifest := range p.Manifests {
		p.Manifests[name] = red.Text(manifest)
	}
	return p, nil
}

// redactedError is an error whose message hides secret values; errors.As
// and errors.Is still see what it wraps.
type redactedError struct {
	err error
	msg string
}

func (e redactedError) Error() string { return e.msg }
func (e redactedError) Unwrap() error { return e.err }

// render is Render on a loaded model.
func render(ctx context.Context, opts Options, model *loader.Model) (*Preview, error) {
	var err error
	p := &Preview{Manifests: map[string]string{}}
	config := opts.Config
	if model.Config != nil {
		// git's keys over the given ConfigMap's, as the running operator
		// lays them; what git replaces is reported, not applied
		if config, p.Overrides, err = clusterconfig.Overlay(opts.Config, model.Config); err != nil {
			return nil, err
		}
		p.ConfigFiles = model.Config.Files
	}
	store, err := runstate.Admit(model, config, nil)
	if err != nil {
		return nil, encryptedHint(model, err)
	}
	if opts.ExecHooks {
		// enabled scripts alone, with no cluster, running tree or metrics
		scripts := hookrun.NewEnabledScripts(hookrun.EnabledOptions{Logger: opts.Logger, HookTimeout: opts.HookTimeout})
		var failed map[string]error
		if p.Enabled, failed, _, err = scripts.ResolveEnabled(ctx, model, store, func(string) bool { return false }); err != nil {
			return nil, err
		}
		// a preview has no previous state to keep: a failed script is the
		// module's failure
		for _, m := range model.Modules {
			if err := failed[m.Name]; err != nil {
				p.Failures = append(p.Failures, Failure{Module: m.Name, File: m.EnabledScript, Error: err.Error()})
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
				return nil, encryptedHint(model, err)
			}
			p.Enabled = append(p.Enabled, m.Name)
		}
	}
	defer func() {
		// a file in the repository, not in a preview's checkout that is gone
		for i, f := range p.Failures {
			if rel, err := filepath.Rel(opts.Root, f.File); opts.Root != "" && err == nil && filepath.IsLocal(rel) {
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
			p.Failures = append(p.Failures, Failure{Module: name, File: filepath.Join(m.Dir, "values.yaml"), Error: err.Error()})
			continue
		}
		manifest, err := kube.Render(ctx, kube.Release{Name: name, Key: m.Key, ChartDir: m.Dir, Files: model.ChartFS(m), Exclude: m.BatchExecutables(), Values: vals}, opts.Namespace)
		if err != nil {
			p.Failures = append(p.Failures, renderFailure(m, err))
			continue
		}
		if !opts.ShowSecrets {
			manifest = RedactSecrets(manifest)
		}
		p.Manifests[name] = manifest
	}
	return p, nil
}

// encryptedHint says, of a tree whose SOPS-encrypted values were read as
// placeholders, that a schema that types or patterns them refuses them.
func encryptedHint(model *loader.Model, err error) error {
	if !model.Placeholders {
		return err
	}
	return fmt.Errorf("%w (a preview without a key reads the tree's SOPS-encrypted values as %s, which a schema may refuse)", err, secretfile.Placeholder)
}

// Module is one module's result: rendered (Manifest) or failed (File,
// Error).
type Module struct {
	Name     string `json:"name"`
	Manifest string `json:"manifest,omitempty"`
	File     string `json:"file,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Modules lists p's modules in run order, each rendered or failed: first
// those whose enabled script failed, then the enabled ones.
func (p *Preview) Modules() []Module {
	failed := map[string]Failure{}
	var out []Module
	for _, f := range p.Failures {
		failed[f.Module] = f
		if !slices.Contains(p.Enabled, f.Module) { // an enabled script that failed
			out = append(out, Module{Name: f.Module, File: f.File, Error: f.Error})
		}
	}
	for _, name := range p.Enabled {
		if f, ok := failed[name]; ok {
			out = append(out, Module{Name: name, File: f.File, Error: f.Error})
		} else if m, ok := p.Manifests[name]; ok {
			out = append(out, Module{Name: name, Manifest: m})
		}
	}
	return out
}
