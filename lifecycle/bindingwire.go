package lifecycle

import (
	"context"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/lifecycle/binding"
	"github.com/addonops/addon-operator/lifecycle/hookrun"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
)

// MonitorSource starts the monitors of kubernetes bindings
// (binding.MonitorSource; the bindings live in lifecycle/binding).
type MonitorSource = binding.MonitorSource

// KubeMonitors is the MonitorSource of the API server behind w.
func KubeMonitors(w *kube.Watcher) MonitorSource { return binding.KubeMonitors(w) }

// bindingRunner is the hook runner as the bindings reach it.
type bindingRunner struct{ r *hookrun.Runner }

var _ binding.HookRunner = bindingRunner{}

func (a bindingRunner) RunHook(ctx context.Context, h *loader.Hook, name string, bc []map[string]any, allowFailure bool) (bool, error) {
	res, err := a.r.RunHook(ctx, h, name, bc, allowFailure)
	return res.ValuesChanged || res.ConfigChanged, err
}

// bindingFollowUps is the steps as the bindings reach them; s is set once
// the steps are built (they are built with the bindings).
type bindingFollowUps struct{ s *steps }

var _ binding.FollowUps = (*bindingFollowUps)(nil)

func (a *bindingFollowUps) QueueReloadAll()              { a.s.queueReloadAll() }
func (a *bindingFollowUps) QueueModuleRun(module string) { a.s.queueModuleRun(module) }
func (a *bindingFollowUps) Converged() <-chan struct{}   { return a.s.phase.convergedCh() }

// currentHook is binding.CurrentHook, for the steps, whose variables are
// often named binding.
func currentHook(trees *runstate.Trees, modules *runstate.Modules, h *loader.Hook) *loader.Hook {
	return binding.CurrentHook(trees, modules, h)
}
