package lifecycle

import (
	"context"
	"time"
)

// healLoop is auto-healing (docs/lifecycle.md, step 15): every interval, the
// release of each ready module with a chart is checked for missing
// resources; a module with any gets a 'module run' (without onStartup).
func (o *Operator) healLoop(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-o.cfg.After(interval):
			o.checkAbsent()
		}
	}
}

func (o *Operator) checkAbsent() {
	model, _ := o.current()
	for _, m := range model.Modules {
		o.mu.Lock()
		st := o.modules[m.Name]
		ready := st != nil && st.enabled && st.state == StateReady
		o.mu.Unlock()
		if !ready || !m.HasChart {
			continue
		}
		absent, err := o.helm.AbsentResources(m.Name)
		if err != nil {
			o.logger.Warn("absent-resources check failed", "module", m.Name, "err", err)
			continue
		}
		o.metrics.absentResources.WithLabelValues(m.Name).Set(float64(len(absent)))
		if len(absent) > 0 {
			o.logger.Info("release resources missing; running module", "module", m.Name, "absent", absent)
			o.Queues().Main().Add(o.moduleRunTask(m.Name, false))
		}
	}
}
