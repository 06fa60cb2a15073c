package lifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/lifecycle/taskkind"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// refreshTimeout bounds the reads that begin a wait: a slow API server
// must not hold "main" beyond it (the watches tell the rest).
const refreshTimeout = 30 * time.Second

// Results of a health wait, the metric's result label.
const (
	waitHealthy  = "healthy"
	waitDegraded = "degraded"
	waitTimeout  = "timeout"
	waitSkipped  = "skipped"
)

// healthWaits are the health waits of a reload's module runs: the task
// that holds the next weights, and how one wait ends.
type healthWaits struct {
	cfg     Config
	logger  *slog.Logger
	metrics *metrics.Recorder
	trees   *runstate.Trees
	modules *runstate.Modules
}

// healthWaitTask follows a module's run in a reload when its Chart.yaml
// asks for it (loader.HealthWaitAnnotation): until the module is Healthy,
// Degraded, or its timeout passes, the task is held at the head of "main"
// (queue.WaitError), so the next weights and the afterAll hooks wait while
// any change still goes first. A newer revision or a 'reload all modules'
// supersedes it with the rest of its reload (taskkind.SupersededByReload); a
// ConfigMap edit runs its module at once, wherever that module waits.
func (s *healthWaits) healthWaitTask(name string) *queue.Task {
	w := &healthWait{read: -1} // the queue runs Do one at a time
	return &queue.Task{
		Key:         queue.Key{Kind: taskkind.HealthWait, Module: name},
		Description: "later weights wait for " + name + " to be Healthy",
		Do:          func(ctx context.Context) error { return s.awaitHealth(ctx, name, w) },
	}
}

// healthWait is one wait's own state across its runs.
type healthWait struct {
	deadline time.Time // set at the first run
	read     int       // the release revision whose objects it last read
}

// watchHealth is the module's health for a wait: the objects are read
// from the API server first when their release is one the wait has not
// read yet (its first run, or a ConfigMap edit that upgraded the module
// meanwhile), since the watch may not have told that upgrade yet, and a
// wait must not end on the Current of the generation before it.
func (s *healthWaits) watchHealth(ctx context.Context, name string, hw *healthWait) (health.Watched, bool) {
	if s.cfg.Health == nil {
		return health.Watched{}, false
	}
	w, ok := s.cfg.Health.Watch(name)
	if !ok || w.Health.Revision == hw.read {
		return w, ok
	}
	rctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	err := s.cfg.Health.Refresh(rctx, name)
	cancel()
	if err != nil {
		s.logger.Warn("could not read the module's objects; its watches will tell", "module", name, "err", err)
	}
	hw.read = w.Health.Revision
	return s.cfg.Health.Watch(name)
}

func (s *healthWaits) awaitHealth(ctx context.Context, name string, hw *healthWait) error {
	model, _ := s.trees.Current()
	m := model.Module(name)
	st := s.modules.Get(name)
	if m == nil || !m.HealthWait.On || !st.Enabled || st.State != StateReady {
		// gone, no longer asking, or its run failed for good: nothing to
		// wait for
		s.waitEnded(ctx, name, waitSkipped, "")
		return nil
	}
	w, ok := s.watchHealth(ctx, name, hw)
	if !ok {
		s.logger.Warn("module asks later weights to wait until it is Healthy, but its health is not tracked; not waiting", "module", name)
		s.waitEnded(ctx, name, waitSkipped, "")
		return nil
	}
	now := s.cfg.Now()
	deadline := &hw.deadline
	if deadline.IsZero() {
		timeout := m.HealthWait.Timeout
		if timeout <= 0 {
			timeout = min(w.Timeout, loader.MaxHealthWait)
		}
		*deadline = now.Add(timeout)
		s.logger.Info("later weights wait for the module to be Healthy", "module", name, "health", w.Health.Status, "timeout", timeout)
	}
	switch {
	case w.Health.Status == health.Healthy:
		s.waitEnded(ctx, name, waitHealthy, "")
		return nil
	case w.Health.Status == health.Degraded:
		s.waitEnded(ctx, name, waitDegraded, fmt.Sprintf("module %s is Degraded (%s); the modules after it run", name, w.Health.Message))
		return nil
	case !now.Before(*deadline):
		s.waitEnded(ctx, name, waitTimeout, fmt.Sprintf("module %s was not Healthy by %s (%s: %s); the modules after it run",
			name, deadline.UTC().Format(time.RFC3339), w.Health.Status, w.Health.Message))
		return nil
	}
	reason := fmt.Sprintf("%s to be Healthy (%s: %s) until %s", name, w.Health.Status, w.Health.Message, deadline.UTC().Format(time.RFC3339))
	return queue.Wait(reason, w.Changed, s.cfg.After(deadline.Sub(now)))
}

// waitEnded records how a module's wait ended; a wait that did not end
// Healthy is a Warning Event naming why (docs/operator.md, "Events").
func (s *healthWaits) waitEnded(ctx context.Context, name, result, warning string) {
	s.metrics.HealthWaits.WithLabelValues(name, result).Inc()
	if result == waitHealthy {
		s.logger.Info("module is Healthy; later weights go on", "module", name)
	}
	if warning == "" {
		return
	}
	s.logger.Warn("health wait ended without the module Healthy", "module", name, "result", result, "reason", warning)
	s.cfg.moduleWarning(ctx, name, "HealthWaitFailed", warning)
}
