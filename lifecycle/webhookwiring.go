package lifecycle

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/addonops/addon-operator/internal/executor"
	"github.com/addonops/addon-operator/lifecycle/binding"
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/webhookrun"
	"github.com/addonops/addon-operator/loader"
)

// The webhooks' names cmd and /status know as lifecycle's (the part
// itself lives in lifecycle/webhookrun).
type (
	WebhookRegistrar     = webhookrun.Registrar
	WebhookStatus        = webhookrun.Status
	WebhookBindingStatus = webhookrun.BindingStatus
)

// webhookHookRunner runs a webhook's hook with the hook runner's files,
// environment, metrics and failure records (webhookrun.HookRunner).
type webhookHookRunner struct{ r *runner }

var (
	_ webhookrun.HookRunner = webhookHookRunner{}
	_ webhookrun.Snapshots  = (*binding.Bindings)(nil)
)

// RunWebhookHook runs a hook for one webhook request, bounded by the
// request's context (the webhook's timeout) and the hook timeout, and
// returns what it wrote to its response file. Values and config patches,
// metrics and object patches it writes are not applied: a webhook run
// answers the API server and changes nothing else.
func (a webhookHookRunner) RunWebhookHook(ctx context.Context, run webhookrun.HookRun) (_ []byte, err error) {
	r, h, binding := a.r, run.Hook, run.Binding
	model, store := r.trees.Current()
	moduleKey, err := moduleKeyOf(model, h)
	if err != nil {
		return nil, err
	}
	logger := r.hookLogger(h, "binding", binding, "queue", "webhook")
	start := r.cfg.Now()
	var usage executor.Usage
	defer func() {
		m := metrics.HookRun{Module: h.Module, Hook: metrics.HookLabel(h), BindingType: run.Type, Activation: "Webhook", Queue: "webhook", OldName: h.Name}
		r.metrics.HookRan(m, binding, r.cfg.Now().Sub(start), &usage, err, false)
	}()
	files, err := r.prepareRun(store, moduleKey, []map[string]any{run.Context}, "response.json")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(files.dir)
	response := filepath.Join(files.dir, "response.json")
	timeout := r.cfg.HookTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	_, err = executor.Run(ctx, executor.Command{
		Path: h.Path,
		// a batch executable's hook runs as `hook run ID`, as in runHook
		Args: h.Args,
		Dir:  filepath.Dir(h.Path),
		Env: files.env(h,
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
		return nil, r.failures.failed(h.Name, binding, err)
	}
	b, err := executor.ReadResultFile(response, run.ResponseLimit)
	if err != nil {
		return nil, fmt.Errorf("hook %s: %s: %w", h.Name, run.ResponseVar, err)
	}
	r.failures.succeeded(h.Name)
	return b, nil
}

// webhookDebugBindings are a hook's webhook bindings for `hook list`: an
// admission webhook with its name, a conversion with its CRD as the kind.
func webhookDebugBindings(c *loader.HookConfig) []DebugBinding {
	var out []DebugBinding
	for _, a := range c.Admission {
		b := loader.KubernetesValidating
		if a.Mutating {
			b = loader.KubernetesMutating
		}
		out = append(out, DebugBinding{Binding: b, Name: a.Name})
	}
	for _, v := range c.Conversion {
		out = append(out, DebugBinding{Binding: loader.KubernetesConversion, Name: v.Name, Kind: v.CRDName})
	}
	return out
}
