package lifecycle

import (
	"context"

	"github.com/addonops/addon-operator/lifecycle/taskkind"

	"github.com/addonops/addon-operator/queue"
)

// modulePurgeTask is 'module purge' (step 7): a release of ours whose module
// directory is gone is uninstalled; no hooks run.
func (s *moduleSteps) modulePurgeTask(name string) *queue.Task {
	return &queue.Task{
		Key:         queue.Key{Kind: taskkind.ModulePurge, Module: name},
		Description: name,
		Do: func(ctx context.Context) error {
			removed, err := s.helm.Purge(ctx, name)
			if err != nil {
				return err
			}
			if removed {
				s.logger.Info("helm release purged: its module is gone", "module", name)
			}
			return s.rec.record(ctx, outcome{What: modulePurged, Module: name})
		},
	}
}
