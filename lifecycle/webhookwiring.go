package lifecycle

import (
	"context"

	"github.com/addonops/addon-operator/lifecycle/binding"
	"github.com/addonops/addon-operator/lifecycle/hookrun"
	"github.com/addonops/addon-operator/lifecycle/webhookrun"
	"github.com/addonops/addon-operator/loader"
)

// WebhookRegistrar registers the running tree's webhooks
// (webhookrun.Registrar; the part lives in lifecycle/webhookrun).
type WebhookRegistrar = webhookrun.Registrar

// webhookHookRunner runs a webhook's hook through the hook runner
// (webhookrun.HookRunner).
type webhookHookRunner struct{ r *hookrun.Runner }

var (
	_ webhookrun.HookRunner = webhookHookRunner{}
	_ webhookrun.Snapshots  = (*binding.Bindings)(nil)
)

func (a webhookHookRunner) RunWebhookHook(ctx context.Context, run webhookrun.HookRun) ([]byte, error) {
	return a.r.RunResponseHook(ctx, hookrun.ResponseRun(run))
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
