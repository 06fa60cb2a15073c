package binding

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/addonops/addon-operator/loader"
)

// hookLimits rate-limit hooks' runs from kubernetes events and schedules
// by their `settings`, as shell-operator does: up to executionBurst runs
// at once, then one per executionMinInterval (docs/operator.md, "Hook
// configs and binding contexts"). Waiting runs on the operator's clock.
type hookLimits struct {
	mu     sync.Mutex
	byHook map[string]hookLimit // by module and hook name
}

type hookLimit struct {
	settings loader.HookSettings
	limiter  *rate.Limiter
}

// wait holds a run of h until its rate limit lets it start.
func (l *hookLimits) wait(ctx context.Context, h *loader.Hook, now func() time.Time, after func(time.Duration) <-chan time.Time) error {
	set := h.Config.Settings
	if set == nil || set.ExecutionMinInterval <= 0 {
		return nil
	}
	key := h.Module + "\x00" + h.Name
	l.mu.Lock()
	if l.byHook == nil {
		l.byHook = map[string]hookLimit{}
	}
	hl, ok := l.byHook[key]
	if !ok || hl.settings != *set {
		// a new tree's settings start a new limit
		hl = hookLimit{settings: *set, limiter: rate.NewLimiter(rate.Every(set.ExecutionMinInterval), max(set.ExecutionBurst, 1))}
		l.byHook[key] = hl
	}
	l.mu.Unlock()
	r := hl.limiter.ReserveN(now(), 1)
	delay := r.DelayFrom(now())
	if delay <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		r.CancelAt(now())
		return ctx.Err()
	case <-after(delay):
		return nil
	}
}
