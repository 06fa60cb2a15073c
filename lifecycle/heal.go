package lifecycle

import (
	"context"
	"time"

	"github.com/addonops/addon-operator/lifecycle/driftcheck"
)

// driftPass is drift's interval check (lifecycle/driftcheck), run after
// the absent-resources check on the heal loop's one timer: drift checks
// have no loop of their own on the interval, so one tick is one pass of
// both, in that order, as before the split.
type driftPass interface{ CheckAll(ctx context.Context) }

var _ driftPass = (*driftcheck.Checker)(nil)

// healLoop is auto-healing (docs/lifecycle.md, step 15): every interval, the
// release of each ready module with a chart is checked for missing
// resources; a module with any gets a 'module run' (without onStartup).
func (s *steps) healLoop(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.cfg.After(interval):
			s.checkAbsent(ctx)
			s.drift.CheckAll(ctx)
		}
	}
}

func (s *steps) checkAbsent(ctx context.Context) {
	model, _ := s.trees.Current()
	for _, m := range model.Modules {
		st := s.modules.Get(m.Name)
		ready := st.Enabled && st.State == StateReady
		if !ready || !m.HasChart {
			continue
		}
		absent, err := s.helm.AbsentResources(ctx, m.Name)
		if err != nil {
			s.logger.Warn("absent-resources check failed", "module", m.Name, "err", err)
			continue
		}
		s.metrics.AbsentResources.WithLabelValues(m.Name).Set(float64(len(absent)))
		if len(absent) > 0 {
			s.logger.Info("release resources missing; running module", "module", m.Name, "absent", absent)
			s.queues.Main().Add(s.mods.moduleRunTask(m.Name, false))
		}
	}
}
