package lifecycle

import (
	"context"

	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// Hook runs for events (docs/lifecycle.md, steps 9–14): a kubernetes event
// or a schedule firing is an activation; a queued run of a hook gathers
// the activations that reach it while it waits, and what its result asks
// for reaches the steps through followUps.

// followUps is what bindings need of the steps: the work an event hook's
// result asks for, and whether the first reload finished (global hooks'
// schedules start after it).
type followUps interface {
	// queueReloadAll: a global hook changed global values or *Enabled flags.
	queueReloadAll()
	// queueModuleRun: a module hook changed its module's values.
	queueModuleRun(module string)
	converged() bool
}

// activation is one reason to run a hook from an event source: a
// kubernetes event or a schedule firing. Its binding context is made when
// the run starts, so snapshots are current.
type activation struct {
	binding, group string
	context        func(s *snapshotter) map[string]any
	// object names a kubernetes event's object (coalesce.go); take, when
	// the run starts, fixes the event the context is made from
	object string
	take   func()
}

// hookRunTask is a run of h for an activation. For a v1 hook, a later
// activation of the same hook queued while this run still waits at the
// queue's tail joins it, as shell-operator combines a hook's consecutive
// tasks: one run whose binding context lists every activation in order,
// where contexts of one group in a row compact into the last. A v0 hook,
// which the original never combines, gets one run per activation.
func (bs *bindings) hookRunTask(h *loader.Hook, kind queue.Kind, queueName string, allowFailure bool, a activation) *queue.Task {
	run := &hookRunPayload{kind: kind, hook: h.Key(), acts: []activation{a}}
	retry := false // Do ran before: this run is a retry
	var t *queue.Task
	t = &queue.Task{
		Key:          queue.Key{Kind: kind, Module: h.Module, Hook: metrics.HookLabel(h), Binding: a.binding},
		Description:  h.Name + ": " + a.binding,
		AllowFailure: allowFailure,
		Payload:      run,
		Do: func(ctx context.Context) error {
			// a rate-limited hook waits in its own queue; one in "main"
			// does not, since a change must not wait behind it there
			if queueName != "" && queueName != queue.MainQueue {
				if err := bs.limits.wait(ctx, h, bs.cfg.Now, bs.cfg.After); err != nil {
					return err
				}
			}
			for _, a := range run.acts {
				if a.take != nil {
					a.take()
				}
			}
			if retry {
				run.acts = latestPerObject(run.acts)
			}
			acts := run.acts
			retry = true
			s := &snapshotter{hm: bs.runningMonitors(h)}
			contexts := make([]map[string]any, 0, len(acts))
			for i, a := range acts {
				if a.group != "" && i+1 < len(acts) && acts[i+1].group == a.group {
					continue
				}
				contexts = append(contexts, a.context(s))
			}
			return bs.runEventHook(ctx, h, acts[0].binding, contexts, t.AllowFailure)
		},
	}
	if !isV0(h) {
		// any binding's activation of the same hook (the same files) joins
		t.Merge = func(later *queue.Task) bool {
			lr, ok := later.Payload.(*hookRunPayload)
			if !ok || lr.hook != run.hook {
				return false
			}
			run.acts = append(run.acts, lr.acts...)
			// a failure may be dropped only when every activation allows it
			t.AllowFailure = t.AllowFailure && later.AllowFailure
			return true
		}
	}
	return t
}

// hookRunPayload is an event hook run's data: the hook's identity in the
// tree (loader.Hook.Key: its files) and the activations it runs for.
type hookRunPayload struct {
	kind queue.Kind
	hook string
	acts []activation
}

func (p *hookRunPayload) TaskKind() queue.Kind { return p.kind }

// runEventHook runs a hook for an event (schedule, kubernetes) and raises
// what its patches changed (docs/lifecycle.md, steps 11–14): a global hook that
// changed global values or *Enabled flags reloads all modules; a module
// hook that changed its values runs the module again.
func (bs *bindings) runEventHook(ctx context.Context, h *loader.Hook, binding string, bindingContext []map[string]any, allowFailure bool) error {
	current := currentHook(bs.trees, bs.modules, h)
	if current == nil {
		return nil // its module was disabled or removed, or the hook is gone from the tree
	}
	res, err := bs.run.RunHook(ctx, current, binding, bindingContext, allowFailure)
	if !res.ValuesChanged && !res.ConfigChanged {
		return err
	}
	// patches applied before a later part of the run failed (its object
	// patches) still count: the retry would find the values unchanged
	// a hook's own changes queue at the tail, as the lifecycle says; only
	// changes from outside (git, the ConfigMap) pre-empt
	if current.Module == "" {
		bs.logger.Info("global values changed by a hook; reloading all modules", "hook", current.Name, "binding", binding)
		bs.steps.queueReloadAll()
		return err
	}
	bs.logger.Info("module values changed by a hook; running module", "hook", current.Name, "module", current.Module)
	bs.steps.queueModuleRun(current.Module)
	return err
}

// currentHook finds the hook of that name in the current model (nil when
// its module is not enabled any more or the hook is gone).
func currentHook(trees *runstate.Trees, modules *runstate.Modules, h *loader.Hook) *loader.Hook {
	model, _ := trees.Current()
	hooks := model.Global.Hooks
	if h.Module != "" {
		m := model.Module(h.Module)
		if m == nil || !modules.IsEnabled(h.Module) {
			return nil
		}
		hooks = m.Hooks
	}
	for _, c := range hooks {
		if c.Name == h.Name {
			return c
		}
	}
	return nil
}
