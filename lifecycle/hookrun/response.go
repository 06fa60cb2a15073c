package hookrun

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/addonops/addon-operator/internal/executor"
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/loader"
)

// ResponseRun is one run of a hook that answers a request (an admission or
// conversion webhook): its binding context and the file it answers in.
type ResponseRun struct {
	Hook    *loader.Hook
	Binding string
	// Type is the binding context's type (Validating, Mutating,
	// Conversion), the run's binding type in the metrics.
	Type    string
	Context map[string]any
	// ResponseVar names the response file in errors; ResponseLimit bounds
	// what is read of it.
	ResponseVar   string
	ResponseLimit int64
}

// RunResponseHook runs a hook for one request, bounded by ctx (the
// webhook's timeout) and the hook timeout, and returns what it wrote to
// its response file. Values and config patches, metrics and object
// patches it writes are not applied: a webhook run answers the API server
// and changes nothing else.
func (r *Runner) RunResponseHook(ctx context.Context, run ResponseRun) (_ []byte, err error) {
	h, binding := run.Hook, run.Binding
	model, store := r.opts.Trees.Current()
	moduleKey, err := moduleKeyOf(model, h)
	if err != nil {
		return nil, err
	}
	logger := r.hookLogger(h, "binding", binding, "queue", "webhook")
	start := r.opts.Now()
	var usage executor.Usage
	defer func() {
		m := metrics.HookRun{Module: h.Module, Hook: metrics.HookLabel(h), BindingType: run.Type, Activation: "Webhook", Queue: "webhook", OldName: h.Name}
		r.opts.Metrics.HookRan(m, binding, r.opts.Now().Sub(start), &usage, err, false)
	}()
	files, err := r.PrepareRun(store, moduleKey, []map[string]any{run.Context}, "response.json")
	if err != nil {
		return nil, err
	}
	defer r.dirs.release(files.Dir)
	response := filepath.Join(files.Dir, "response.json")
	timeout := r.opts.HookTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	_, err = executor.Run(ctx, executor.Command{
		Path: h.Path,
		// a batch executable's hook runs as `hook run ID`, as in RunHook
		Args: h.Args,
		Dir:  filepath.Dir(h.Path),
		Env: files.Env(h,
			// shell-operator's names: one file for validating and mutating
			"VALIDATING_RESPONSE_PATH="+response,
			"ADMISSION_RESPONSE_PATH="+response,
			"CONVERSION_RESPONSE_PATH="+response,
		),
		Timeout: timeout,
		Logger:  logger,
		Usage:   &usage,
	})
	if err != nil {
		// one line, without what the hook printed: the API server hands
		// the message to the client (docs/security.md, "Who sees what")
		return nil, r.failures.Failed(h.Name, binding, err)
	}
	b, err := executor.ReadResultFile(response, run.ResponseLimit)
	if err != nil {
		return nil, fmt.Errorf("hook %s: %s: %w", h.Name, run.ResponseVar, err)
	}
	r.failures.succeeded(h.Name)
	return b, nil
}
