package lifecycle

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/addonops/addon-operator/lifecycle/runstate"
)

// configHeldRecheck is how often a held ConfigMap edit asks
// Config.ConfigHeld again (a window opens on the second).
const configHeldRecheck = time.Second

// heldConfig is the newest ConfigMap edit a change window holds
// (Config.ConfigHeld, docs/operator.md, "Fleets"): kept, shown on
// /status, applied when the window opens. Drift correction and health
// go on meanwhile.
type heldConfig struct {
	mu      sync.Mutex
	data    map[string]string // nil: none held
	version string
	reason  string
	since   time.Time
}

// holdConfig keeps an edit the window holds and reports whether it did.
// Data the running tree has already (a hook's own write echoed back) is
// no edit and passes.
func (s *steps) holdConfig(data map[string]string, version string) bool {
	if s.cfg.ConfigHeld == nil {
		return false
	}
	reason, held := s.cfg.ConfigHeld()
	t := s.trees.Load()
	if held && t != nil && (!runstate.NewerVersion(version, t.ConfigVersion) || maps.Equal(data, t.ClusterData)) {
		held = false
	}
	s.held.mu.Lock()
	defer s.held.mu.Unlock()
	if !held {
		s.held.data = nil
		return false
	}
	if s.held.data == nil {
		s.held.since = time.Now().UTC()
		s.logger.Info("ConfigMap change held by a change window; applied when it opens", "reason", reason)
	}
	s.held.data, s.held.version, s.held.reason = data, version, reason
	return true
}

// releaseConfig applies the held edit once the window lets it through.
func (s *steps) releaseConfig(ctx context.Context) {
	if s.cfg.ConfigHeld == nil {
		return
	}
	tick := time.NewTicker(configHeldRecheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s.held.mu.Lock()
		data, version := s.held.data, s.held.version
		s.held.mu.Unlock()
		if data == nil {
			continue
		}
		if reason, held := s.cfg.ConfigHeld(); held {
			s.held.mu.Lock()
			s.held.reason = reason
			s.held.mu.Unlock()
			continue
		}
		s.logger.Info("the change window opened: applying the held ConfigMap change")
		s.onConfigChange(ctx, data, version)
	}
}

// HeldConfig is the ConfigMap edit a change window holds: why and since
// when (ok false: none).
func (o *Operator) HeldConfig() (reason string, since time.Time, ok bool) {
	h := &o.steps.held
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reason, h.since, h.data != nil
}
