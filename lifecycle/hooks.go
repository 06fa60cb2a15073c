package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"

	"github.com/addonops/addon-operator/internal/executor"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/values"
)

// runner runs hooks and enabled scripts: it writes their temporary files
// (binding context, config values, values), sets their environment, runs
// them bounded by the hook timeout, and reads back and applies their
// patches to the state (docs/operator.md, "How hooks run").
type runner struct {
	cfg      Config
	logger   *slog.Logger
	metrics  *metrics.Recorder
	trees    *runstate.Trees
	modules  *runstate.Modules
	failures *hookFailures // failure.go
	backend  ConfigBackend // where config patches are written
}

func newRunner(cfg Config, m *metrics.Recorder, trees *runstate.Trees, modules *runstate.Modules, backend ConfigBackend) *runner {
	return &runner{cfg: cfg, logger: cfg.Logger, metrics: m, trees: trees, modules: modules, failures: &hookFailures{}, backend: backend}
}

// hookResult says what a hook run changed.
type hookResult struct {
	// ValuesChanged: the hook's values patch changed effective values or
	// (a global hook's) *Enabled flags.
	ValuesChanged bool
	// ConfigChanged: the hook's config patch changed the ConfigMap.
	ConfigChanged bool
}

// hookFiles are the temporary files of one hook run.
type hookFiles struct {
	dir                                     string
	bindingContext, configValues, values    string
	configPatch, valuesPatch, enabledResult string
	enabledReason                           string // MODULE_ENABLED_REASON
	metrics                                 string // METRICS_PATH
	kubePatch                               string // KUBERNETES_PATCH_PATH
}

func (r *runner) newHookFiles() (*hookFiles, error) {
	dir, err := os.MkdirTemp(r.cfg.TempDir, "addon-operator-hook-")
	if err != nil {
		return nil, fmt.Errorf("hook temp dir: %w", err)
	}
	f := &hookFiles{
		dir:            dir,
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

// hookLogger is the logger of one run of hook.
func (r *runner) hookLogger(hook *loader.Hook, attrs ...any) *slog.Logger {
	logger := r.logger.With(append([]any{"hook", hook.Name}, attrs...)...)
	if hook.Module != "" {
		logger = logger.With("module", hook.Module)
	}
	return logger
}

// prepareRun makes the files of one run of a hook of moduleKey ("" for a
// global hook): its binding context, config values and values written,
// the files it may hand back created empty, and the files named extra in
// its directory too (more result files). The caller removes files.dir.
func (r *runner) prepareRun(store *values.Store, moduleKey string, bindingContext any, extra ...string) (*hookFiles, error) {
	files, err := r.newHookFiles()
	if err != nil {
		return nil, err
	}
	if err := files.write(r, store, moduleKey, bindingContext, extra); err != nil {
		os.RemoveAll(files.dir)
		return nil, err
	}
	return files, nil
}

func (f *hookFiles) write(r *runner, store *values.Store, moduleKey string, bindingContext any, extra []string) error {
	config, vals, err := r.hookInputs(store, moduleKey, r.modules.EnabledList())
	if err != nil {
		return err
	}
	for path, v := range map[string]any{f.bindingContext: bindingContext, f.configValues: config, f.values: vals} {
		if err := writeJSON(path, v); err != nil {
			return err
		}
	}
	results := []string{f.configPatch, f.valuesPatch, f.metrics, f.kubePatch}
	for _, name := range extra {
		results = append(results, filepath.Join(f.dir, name))
	}
	for _, p := range results {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// env is the documented environment of a run of hook with these files,
// then more, then the hook's own (docs/operator.md, "What a hook gets").
func (f *hookFiles) env(hook *loader.Hook, more ...string) []string {
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
func (r *runner) hookInputs(store *values.Store, moduleKey string, enabledModules []string) (config, vals values.Values, err error) {
	if moduleKey == "" {
		vals, err = store.GlobalValues()
		return store.GlobalConfigValues(), vals, err
	}
	vals, err = store.ModuleValues(moduleKey, enabledModules)
	return store.ModuleConfigValues(moduleKey), vals, err
}

// runHook runs one hook for one binding with the documented files and
// environment, then applies its config patch (written to the ConfigMap at
// once) and its values patch (kept in memory). A failure counts in
// addon_operator_{global,module}_hook_run_errors_total, or with allowFailure
// in ..._allowed_errors_total; the metrics it wrote to METRICS_PATH are
// applied only when the whole run succeeded (metricsfile.go), its object
// patches after its values patches (objectpatches.go).
func (r *runner) runHook(ctx context.Context, hook *loader.Hook, binding string, bindingContext []map[string]any, allowFailure bool) (res hookResult, err error) {
	model, store := r.trees.Current()
	moduleKey, err := moduleKeyOf(model, hook)
	if err != nil {
		return res, err
	}
	logger := r.hookLogger(hook, "binding", binding)
	start := r.cfg.Now()
	var usage executor.Usage
	defer func() {
		r.metrics.HookRan(metrics.HookRunOf(hook, binding), binding, r.cfg.Now().Sub(start), &usage, err, allowFailure)
		r.observeReadiness(hook, err)
	}()

	files, err := r.prepareRun(store, moduleKey, bindingContext)
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(files.dir)
	logger.Debug("running hook")
	_, err = executor.Run(ctx, executor.Command{
		Path: hook.Path,
		// a batch executable's hook runs as `hook run ID` (docs/operator.md,
		// "Batch hooks"); any other hook with no arguments
		Args:    hook.Args,
		Dir:     filepath.Dir(hook.Path),
		Env:     files.env(hook),
		Timeout: r.cfg.HookTimeout,
		Logger:  logger,
		Usage:   &usage,
	})
	if err != nil {
		return res, r.objectPatchesOnFailure(ctx, hook.Name, files.kubePatch, r.failures.failed(hook.Name, binding, err))
	}
	// everything the hook handed back is read and checked before any of it
	// is applied, so a bad file changes nothing
	ops, err := readHookMetrics(hook.Name, files.metrics)
	if err == nil {
		err = r.checkHookMetrics(hook.Name, ops)
	}
	if err != nil {
		return res, err
	}
	objOps, err := readObjectPatches(hook.Name, files.kubePatch)
	if err != nil {
		return res, err
	}
	if res, err = r.applyPatches(ctx, hook.Name, moduleKey, files); err != nil {
		return res, err
	}
	if err := r.applyObjectPatches(ctx, hook.Name, objOps); err != nil {
		return res, err
	}
	if err := r.applyHookMetrics(hook, ops, logger); err != nil {
		return res, err
	}
	r.failures.succeeded(hook.Name)
	return res, nil
}

func (r *runner) applyPatches(ctx context.Context, hookName, moduleKey string, files *hookFiles) (hookResult, error) {
	var res hookResult
	readPatch := func(path, what string) (values.Patch, error) {
		b, err := readResultFile(hookName, what, path)
		if err != nil {
			return nil, err
		}
		return values.ParsePatch(hookName+" "+what, b)
	}
	cp, err := readPatch(files.configPatch, "CONFIG_VALUES_JSON_PATCH_PATH")
	if err != nil {
		return res, err
	}
	vp, err := readPatch(files.valuesPatch, "VALUES_JSON_PATCH_PATH")
	if err != nil {
		return res, err
	}
	if len(cp) > 0 {
		data, version, err := r.backend.Update(ctx, func(cur map[string]string) (map[string]string, error) {
			next, err := values.ApplyConfigPatch(hookName, moduleKey, cur, cp)
			if err != nil {
				return nil, err
			}
			// checked against the schemas current at the write
			_, store := r.trees.Current()
			if err := store.CheckConfig(next); err != nil {
				return nil, fmt.Errorf("hook %s: config patch: %w", hookName, err)
			}
			return next, nil
		})
		if err != nil {
			return res, err
		}
		// adopted now, so the ConfigMap event that echoes this write is a
		// no-op; skipped when a newer edit already arrived
		ch, _, err := r.trees.SetConfig(data, version, nil)
		if err != nil {
			return res, err
		}
		logDropped(r.logger, "the ConfigMap changed", ch.Dropped)
		res.ConfigChanged = !ch.Empty()
	}
	if len(vp) > 0 {
		// the store current now: a tree adopted while the hook ran keeps
		// the patch (docs/operator.md, "One state transition at a time")
		pr, err := r.trees.ApplyValuesPatch(hookName, moduleKey, vp)
		if err != nil {
			return res, err
		}
		res.ValuesChanged = pr.Changed
	}
	return res, nil
}

// runEnabledScript runs a module's `enabled` script (docs/lifecycle.md,
// step 4). It reads "true" or "false" from MODULE_ENABLED_RESULT; when the
// script left that file empty, the last line it printed counts (a form the
// original's module examples use). A "false" comes with the reason the
// script wrote to MODULE_ENABLED_REASON ("" for none; enabledreason.go).
func (r *runner) runEnabledScript(ctx context.Context, store *values.Store, m *loader.Module, enabledBefore []string) (bool, string, error) {
	files, err := r.newHookFiles()
	if err != nil {
		return false, "", err
	}
	defer os.RemoveAll(files.dir)
	config, vals, err := r.hookInputs(store, m.Key, enabledBefore)
	if err != nil {
		return false, "", err
	}
	if err := writeJSON(files.configValues, config); err != nil {
		return false, "", err
	}
	if err := writeJSON(files.values, vals); err != nil {
		return false, "", err
	}
	for _, p := range []string{files.enabledResult, files.enabledReason} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			return false, "", err
		}
	}
	start := r.cfg.Now()
	var usage executor.Usage
	out, err := executor.Run(ctx, executor.Command{
		Path: m.EnabledScript,
		Dir:  m.Dir,
		Env: []string{
			"CONFIG_VALUES_PATH=" + files.configValues,
			"VALUES_PATH=" + files.values,
			"MODULE_ENABLED_RESULT=" + files.enabledResult,
			"MODULE_ENABLED_REASON=" + files.enabledReason,
		},
		Timeout:       r.cfg.HookTimeout,
		CaptureStdout: true,
		Logger:        r.logger.With("module", m.Name, "hook", "enabled"),
		Usage:         &usage,
	})
	r.metrics.EnabledRan(m, r.cfg.Now().Sub(start), &usage, err)
	if err != nil {
		return false, "", newHookError("module "+m.Name+": enabled script", err)
	}
	result, err := readResultFile(m.Name+" enabled script", "MODULE_ENABLED_RESULT", files.enabledResult)
	if err != nil {
		return false, "", err
	}
	answer := strings.TrimSpace(string(result))
	if answer == "" {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		answer = strings.TrimSpace(lines[len(lines)-1])
	}
	switch answer {
	case "true":
		return true, "", nil
	case "false":
		reason, err := readEnabledReason(m.Name, files.enabledReason)
		return false, reason, err
	}
	return false, "", &hookError{what: "module " + m.Name + ": enabled script", summary: "MODULE_ENABLED_RESULT: want true or false", output: fmt.Sprintf("got %q", answer)}
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

// logDropped logs temporary values patch operations that no longer apply
// (their path is gone) and were dropped rather than wedge their module.
func logDropped(logger *slog.Logger, why string, dropped []values.DroppedOp) {
	for _, d := range dropped {
		logger.Warn("temporary values patch operation dropped: "+why, "section", d.Section, "hook", d.Hook, "op", d.Op, "path", d.Path, "reason", d.Reason)
	}
}
