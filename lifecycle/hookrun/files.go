package hookrun

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/addonops/addon-operator/internal/executor"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/values"
)

// Files are the temporary files of one hook run; Dir holds them all and
// the caller of PrepareRun releases it (Runner.Release).
type Files struct {
	Dir                                     string
	bindingContext, configValues, values    string
	configPatch, valuesPatch, enabledResult string
	enabledReason                           string // MODULE_ENABLED_REASON
	metrics                                 string // METRICS_PATH
	kubePatch                               string // KUBERNETES_PATCH_PATH
}

func newFiles(tempDir string) (*Files, error) {
	dir, err := os.MkdirTemp(tempDir, "addon-operator-hook-")
	if err != nil {
		return nil, fmt.Errorf("hook temp dir: %w", err)
	}
	f := &Files{
		Dir:            dir,
		bindingContext: filepath.Join(dir, "binding-context.json"),
		configValues:   filepath.Join(dir, "config-values.json"),
		values:         filepath.Join(dir, "values.json"),
		configPatch:    filepath.Join(dir, "config-values-patch.json"),
		valuesPatch:    filepath.Join(dir, "values-patch.json"),
		enabledResult:  filepath.Join(dir, "enabled-result"),
		enabledReason:  filepath.Join(dir, "enabled-reason"),
		metrics:        filepath.Join(dir, "metrics.json"),
		kubePatch:      filepath.Join(dir, "kubernetes-patch"),
	}
	return f, nil
}

// moduleKeyOf is the values key of hook's module ("" for a global hook).
func moduleKeyOf(model *loader.Model, hook *loader.Hook) (string, error) {
	if hook.Module == "" {
		return "", nil
	}
	m := model.Module(hook.Module)
	if m == nil {
		return "", fmt.Errorf("module %q is not in the tree", hook.Module)
	}
	return m.Key, nil
}

// hookLogger is the logger of one run of hook, with its hook and module.
func (r *Runner) hookLogger(hook *loader.Hook, attrs ...any) *slog.Logger {
	logger := r.opts.Logger.With(append([]any{"hook", hook.Name}, attrs...)...)
	if hook.Module != "" {
		logger = logger.With("module", hook.Module)
	}
	return logger
}

// PrepareRun makes the files of one run of a hook of moduleKey ("" for a
// global hook): its binding context, config values and values written,
// the files it may hand back created empty, and the files named extra in
// its directory too (more result files, such as a webhook's response).
// The caller hands them back with r.dirs.release(files.Dir), which
// removes them after the run while Run runs.
func (r *Runner) PrepareRun(store *values.Store, moduleKey string, bindingContext any, extra ...string) (*Files, error) {
	files, err := r.dirs.take()
	if err != nil {
		return nil, err
	}
	if err := files.write(store, moduleKey, r.opts.Modules.EnabledList(), bindingContext, extra); err != nil {
		r.dirs.release(files.Dir)
		return nil, err
	}
	return files, nil
}

// Run makes each hook run's directory ahead of it and removes it after
// the run (tempdirs.go) until ctx ends.
func (r *Runner) Run(ctx context.Context) { r.dirs.run(ctx) }

// write writes a run's inputs and its extra result files (the others
// exist: tempDirs.fresh).
func (f *Files) write(store *values.Store, moduleKey string, enabled []string, bindingContext any, extra []string) error {
	config, vals, err := hookInputs(store, moduleKey, enabled)
	if err != nil {
		return err
	}
	for path, v := range map[string]any{f.bindingContext: bindingContext, f.configValues: config, f.values: vals} {
		if err := writeJSON(path, v); err != nil {
			return err
		}
	}
	for _, name := range extra {
		if err := os.WriteFile(filepath.Join(f.Dir, name), nil, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// Env is the documented environment of a run of hook with these files,
// then more, then the hook's own (docs/operator.md, "What a hook gets").
func (f *Files) Env(hook *loader.Hook, more ...string) []string {
	env := []string{
		"BINDING_CONTEXT_PATH=" + f.bindingContext,
		"WORKING_DIR=" + hook.WorkingDir,
		"CONFIG_VALUES_PATH=" + f.configValues,
		"VALUES_PATH=" + f.values,
		"CONFIG_VALUES_JSON_PATCH_PATH=" + f.configPatch,
		"VALUES_JSON_PATCH_PATH=" + f.valuesPatch,
		"METRICS_PATH=" + f.metrics,
		"KUBERNETES_PATCH_PATH=" + f.kubePatch,
	}
	return append(append(env, more...), hook.Env...)
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// hookInputs returns CONFIG_VALUES_PATH and VALUES_PATH contents: global
// sections for a global hook; global + module sections, with
// global.enabledModules, for a module hook.
func hookInputs(store *values.Store, moduleKey string, enabledModules []string) (config, vals values.Values, err error) {
	if moduleKey == "" {
		vals, err = store.GlobalValues()
		return store.GlobalConfigValues(), vals, err
	}
	vals, err = store.ModuleValues(moduleKey, enabledModules)
	return store.ModuleConfigValues(moduleKey), vals, err
}

// readResultFile reads a file a hook hands back (what names the variable
// that gave the hook its path), bounded and without following a link or
// blocking on a FIFO the hook put in its place (docs/security.md,
// "Limits"); the error fails the run and names the hook and the variable.
func readResultFile(hook, what, path string) ([]byte, error) {
	b, err := executor.ReadResultFile(path, executor.MaxResultFile)
	if err != nil {
		return nil, fmt.Errorf("hook %s: %s: %w", hook, what, err)
	}
	return b, nil
}
