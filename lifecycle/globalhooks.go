package lifecycle

import (
	"context"
	"fmt"
	"sort"

	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/taskkind"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// ordered returns the hooks with an ordered binding, by ORDER then name.
func ordered(hooks []*loader.Hook, binding string) []*loader.Hook {
	var out []*loader.Hook
	for _, h := range hooks {
		if _, ok := h.Config.Order(binding); ok {
			out = append(out, h)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, _ := out[i].Config.Order(binding)
		b, _ := out[j].Config.Order(binding)
		if a != b {
			return a < b
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// globalHookTasks: one task per global hook with the binding, in order.
// Each runs the hook of that name in the model current when it runs, so a
// retry after a tree change runs the new tree's hook.
func (s *steps) globalHookTasks(binding string) []*queue.Task {
	model, _ := s.trees.Current()
	var tasks []*queue.Task
	for _, h := range ordered(model.Global.Hooks, binding) {
		tasks = append(tasks, &queue.Task{
			Key:         queue.Key{Kind: taskkind.GlobalHook, Hook: metrics.HookLabel(h), Binding: binding},
			Description: fmt.Sprintf("%s: %s", binding, h.Name),
			OnFailure: func(err error, _ int) {
				_ = s.rec.record(context.Background(), outcome{What: globalHookFailed, Err: err})
			},
			Do: func(ctx context.Context) error {
				h := currentHook(s.trees, s.modules, h)
				if h == nil {
					return nil // gone from the tree
				}
				res, err := s.run.RunHook(ctx, h, binding, s.bind.OrderedContext(h, binding), false)
				// patches applied before a later part of the run failed count
				if binding == loader.AfterAll && (res.ValuesChanged || res.ConfigChanged) {
					s.phase.changedGlobal()
				}
				return err
			},
		})
	}
	return tasks
}
