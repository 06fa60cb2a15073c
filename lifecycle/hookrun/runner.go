package hookrun

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/addonops/addon-operator/internal/executor"
	"github.com/addonops/addon-operator/internal/steptime"
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/values"
)

// ConfigWriter is where hooks' config patches are written: the values
// ConfigMap (lifecycle.ConfigBackend).
type ConfigWriter interface {
	Update(ctx context.Context, fn func(map[string]string) (map[string]string, error)) (map[string]string, string, error)
}

// clusterSide is a ConfigWriter whose data is the ConfigMap's with more
// merged over it (kube.ClusterValues: the values Secret's): a config
// patch is checked as it will be read.
type clusterSide interface {
	ClusterData(cm map[string]string) (map[string]string, error)
}

// Options configure a Runner.
type Options struct {
	Logger *slog.Logger     // default slog.Default()
	Now    func() time.Time // default time.Now
	// HookTimeout bounds one run, and its object patches together
	// (default 10m).
	HookTimeout time.Duration
	// TempDir holds the files handed to hooks (default: the system's).
	TempDir string
	// ObjectPatcher applies KUBERNETES_PATCH_PATH operations (nil: a hook
	// that writes any fails).
	ObjectPatcher ObjectPatcher
	// Config is where config patches are written (nil: a hook that writes
	// one fails).
	Config ConfigWriter
	// Metrics records runs and holds the hook metrics store (required).
	Metrics *metrics.Recorder
	// Trees is the running tree a run reads and patches; Modules the
	// module registry (the enabled list, readiness) (both required).
	Trees   *runstate.Trees
	Modules *runstate.Modules
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HookTimeout <= 0 {
		o.HookTimeout = 10 * time.Minute
	}
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	return o
}

// Runner runs hooks and enabled scripts and applies what they hand back
// to the state (docs/operator.md, "How hooks run").
type Runner struct {
	opts     Options
	failures *Failures
	enabled  *EnabledScripts
	dirs     *tempDirs
}

// New makes a Runner.
func New(opts Options) *Runner {
	opts = opts.withDefaults()
	eo := EnabledOptions{Logger: opts.Logger, Now: opts.Now, HookTimeout: opts.HookTimeout, TempDir: opts.TempDir}
	if opts.Metrics != nil { // not a typed nil in the interface
		eo.Recorder = opts.Metrics
	}
	return &Runner{opts: opts, failures: &Failures{}, enabled: NewEnabledScripts(eo), dirs: newTempDirs(opts.TempDir)}
}

// Failures are the hooks' last failed runs, for /debug/hooks.
func (r *Runner) Failures() *Failures { return r.failures }

// Result says what a hook run changed.
type Result struct {
	// ValuesChanged: the hook's values patch changed effective values or
	// (a global hook's) *Enabled flags.
	ValuesChanged bool
	// ConfigChanged: the hook's config patch changed the ConfigMap.
	ConfigChanged bool
}

// RunHook runs one hook for one binding with the documented files and
// environment, then applies its config patch (written to the ConfigMap at
// once) and its values patch (kept in memory). A failure counts in
// addon_operator_{global,module}_hook_run_errors_total, or with allowFailure
// in ..._allowed_errors_total; the metrics it wrote to METRICS_PATH are
// applied only when the whole run succeeded (metricsfile.go), its object
// patches after its values patches (objectpatches.go).
func (r *Runner) RunHook(ctx context.Context, hook *loader.Hook, binding string, bindingContext []map[string]any, allowFailure bool) (res Result, err error) {
	model, store := r.opts.Trees.Current()
	moduleKey, err := moduleKeyOf(model, hook)
	if err != nil {
		return res, err
	}
	logger := r.hookLogger(hook, "binding", binding)
	start := r.opts.Now()
	var usage executor.Usage
	defer func() {
		r.opts.Metrics.HookRan(metrics.HookRunOf(hook, binding), binding, r.opts.Now().Sub(start), &usage, err, allowFailure)
		r.observeReadiness(hook, err)
		steptime.Mark(ctx, steptime.HookMetrics)
	}()

	files, err := r.PrepareRun(store, moduleKey, bindingContext)
	if err != nil {
		return res, err
	}
	// the temp files' removal counts with their writing
	defer func() {
		r.dirs.release(files.Dir)
		steptime.Mark(ctx, steptime.HookFiles)
	}()
	steptime.Mark(ctx, steptime.HookFiles)
	logger.Debug("running hook")
	_, err = executor.Run(ctx, executor.Command{
		Path: hook.Path,
		// a batch executable's hook runs as `hook run ID` (docs/operator.md,
		// "Batch hooks"); any other hook with no arguments
		Args:    hook.Args,
		Dir:     filepath.Dir(hook.Path),
		Env:     files.Env(hook),
		Timeout: r.opts.HookTimeout,
		Logger:  logger,
		Usage:   &usage,
	})
	steptime.Mark(ctx, steptime.HookExec)
	if err != nil {
		return res, r.objectPatchesOnFailure(ctx, hook.Name, files.kubePatch, r.failures.Failed(hook.Name, binding, err))
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
	steptime.Mark(ctx, steptime.HookResults)
	return res, nil
}

func (r *Runner) applyPatches(ctx context.Context, hookName, moduleKey string, files *Files) (Result, error) {
	var res Result
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
		if r.opts.Config == nil {
			return res, fmt.Errorf("hook %s: CONFIG_VALUES_JSON_PATCH_PATH: the operator has no ConfigMap to write config patches to", hookName)
		}
		data, version, err := r.opts.Config.Update(ctx, func(cur map[string]string) (map[string]string, error) {
			next, err := values.ApplyConfigPatch(hookName, moduleKey, cur, cp)
			if err != nil {
				return nil, err
			}
			// checked against the schemas current at the write, with
			// what the cluster side merges over the ConfigMap (a values
			// Secret: clusterSide), and the config in git laid over that
			// as it will be
			check := next
			if cs, ok := r.opts.Config.(clusterSide); ok {
				if check, err = cs.ClusterData(next); err != nil {
					return nil, fmt.Errorf("hook %s: config patch: %w", hookName, err)
				}
			}
			model, store := r.opts.Trees.Current()
			eff, _, err := runstate.Effective(model, check)
			if err != nil {
				return nil, fmt.Errorf("hook %s: config patch: %w", hookName, err)
			}
			if err := store.CheckConfig(eff); err != nil {
				return nil, fmt.Errorf("hook %s: config patch: %w", hookName, err)
			}
			return next, nil
		})
		if err != nil {
			return res, err
		}
		// adopted now, so the ConfigMap event that echoes this write is a
		// no-op; skipped when a newer edit already arrived
		ch, _, err := r.opts.Trees.SetConfig(data, version, nil)
		if err != nil {
			return res, err
		}
		for _, d := range ch.Dropped {
			r.opts.Logger.Warn("temporary values patch operation dropped: the ConfigMap changed", "section", d.Section, "hook", d.Hook, "op", d.Op, "path", d.Path, "reason", d.Reason)
		}
		res.ConfigChanged = !ch.Empty()
	}
	if len(vp) > 0 {
		// the store current now: a tree adopted while the hook ran keeps
		// the patch (docs/operator.md, "One state transition at a time")
		pr, err := r.opts.Trees.ApplyValuesPatch(hookName, moduleKey, vp)
		if err != nil {
			return res, err
		}
		res.ValuesChanged = pr.Changed
	}
	return res, nil
}

// ResolveEnabled is discovery's decision (EnabledScripts.ResolveEnabled).
func (r *Runner) ResolveEnabled(ctx context.Context, model *loader.Model, store *values.Store, was func(string) bool) (enabled []string, failed map[string]error, reasons map[string]string, err error) {
	return r.enabled.ResolveEnabled(ctx, model, store, was)
}

// RunEnabledScript runs a module's enabled script
// (EnabledScripts.RunEnabledScript).
func (r *Runner) RunEnabledScript(ctx context.Context, store *values.Store, m *loader.Module, enabledBefore []string) (bool, string, error) {
	return r.enabled.RunEnabledScript(ctx, store, m, enabledBefore)
}
