package hookrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/addonops/addon-operator/internal/executor"
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/values"
)

// EnabledRecorder records a run of an enabled script (*metrics.Recorder).
type EnabledRecorder interface {
	EnabledRan(mod *loader.Module, took time.Duration, usage *executor.Usage, err error)
}

var _ EnabledRecorder = (*metrics.Recorder)(nil)

// EnabledOptions configure EnabledScripts: what an enabled script needs,
// no cluster, running tree or registry.
type EnabledOptions struct {
	Logger      *slog.Logger     // default slog.Default()
	Now         func() time.Time // default time.Now
	HookTimeout time.Duration    // default 10m
	TempDir     string           // default: the system's
	Recorder    EnabledRecorder  // nil: runs are not recorded
}

// EnabledScripts runs modules' `enabled` scripts (docs/lifecycle.md,
// step 4).
type EnabledScripts struct {
	opts EnabledOptions
}

// NewEnabledScripts makes an EnabledScripts.
func NewEnabledScripts(opts EnabledOptions) *EnabledScripts {
	o := Options{Logger: opts.Logger, Now: opts.Now, HookTimeout: opts.HookTimeout, TempDir: opts.TempDir}.withDefaults()
	opts.Logger, opts.Now, opts.HookTimeout, opts.TempDir = o.Logger, o.Now, o.HookTimeout, o.TempDir
	return &EnabledScripts{opts: opts}
}

// ConfigRefusal is why ResolveEnabled did not enable a module its flags
// and enabled script enable: its ConfigMap section does not match its
// config schema. The error names the module and the violations.
type ConfigRefusal struct{ Err error }

func (e *ConfigRefusal) Error() string {
	return "not enabled: its ConfigMap section does not match its config schema: " + e.Err.Error()
}

func (e *ConfigRefusal) Unwrap() error { return e.Err }

// IsConfigRefusal: err is (or wraps) a ConfigRefusal.
func IsConfigRefusal(err error) bool {
	var r *ConfigRefusal
	return errors.As(err, &r)
}

// ResolveEnabled is step 4's decision: the merged enabled flag, then the
// enabled script, which sees the modules enabled before it. A script that
// fails (an exit status, a timeout, an answer that is neither true nor
// false) decides nothing: the module counts as enabled when was says it
// was, and is in failed with the error; only a cancel is an error. A
// module that would be enabled but whose ConfigMap section does not match
// its config schema is left as it was too: enabled when was says it was
// (it is not run with that section), and in failed with a ConfigRefusal:
// sections are validated when their module is enabled
// (docs/operator.md, "Values"); admission validated those of the modules
// the running tree has enabled and of those the flags alone enable.
// reasons are the reasons scripts gave for answering false, by module.
func (e *EnabledScripts) ResolveEnabled(ctx context.Context, model *loader.Model, store *values.Store, was func(string) bool) (enabled []string, failed map[string]error, reasons map[string]string, err error) {
	failed, reasons = map[string]error{}, map[string]string{}
	for _, m := range model.Modules {
		on := store.Enabled(m.Key)
		if on && m.EnabledScript != "" {
			res, reason, err := e.RunEnabledScript(ctx, store, m, slices.Clone(enabled))
			switch {
			case ctx.Err() != nil:
				return nil, nil, nil, ctx.Err()
			case err != nil:
				failed[m.Name] = err
				on = was(m.Name)
			default:
				on = res
				if !res && reason != "" {
					reasons[m.Name] = reason
				}
			}
		}
		if on && failed[m.Name] == nil {
			if err := store.CheckModuleConfig(m.Key); err != nil {
				failed[m.Name] = &ConfigRefusal{Err: err}
				on = was(m.Name)
			}
		}
		if on {
			enabled = append(enabled, m.Name)
		}
	}
	return enabled, failed, reasons, nil
}

// RunEnabledScript runs a module's `enabled` script (docs/lifecycle.md,
// step 4), which sees enabledBefore as global.enabledModules. It reads
// "true" or "false" from MODULE_ENABLED_RESULT; when the script left that
// file empty, the last line it printed counts (a form the original's
// module examples use). A "false" comes with the reason the script wrote
// to MODULE_ENABLED_REASON ("" for none; statusline.go).
func (e *EnabledScripts) RunEnabledScript(ctx context.Context, store *values.Store, m *loader.Module, enabledBefore []string) (bool, string, error) {
	files, err := newFiles(e.opts.TempDir)
	if err != nil {
		return false, "", err
	}
	defer os.RemoveAll(files.Dir)
	config, vals, err := hookInputs(store, m.Key, enabledBefore)
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
	start := e.opts.Now()
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
		Timeout:       e.opts.HookTimeout,
		CaptureStdout: true,
		Logger:        e.opts.Logger.With("module", m.Name, "hook", "enabled"),
		Usage:         &usage,
	})
	if e.opts.Recorder != nil {
		e.opts.Recorder.EnabledRan(m, e.opts.Now().Sub(start), &usage, err)
	}
	if err != nil {
		return false, "", NewHookError("module "+m.Name+": enabled script", err)
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
	return false, "", &HookError{what: "module " + m.Name + ": enabled script", summary: "MODULE_ENABLED_RESULT: want true or false", output: fmt.Sprintf("got %q", answer)}
}
