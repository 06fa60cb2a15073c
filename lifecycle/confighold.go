package lifecycle

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/addonops/addon-operator/lifecycle/runstate"
)

// configHeldRecheck is how often a held ConfigMap edit asks its
// predicate again (a window opens on the second).
const configHeldRecheck = time.Second

// ConfigHold keeps the newest ConfigMap edit a change window holds
// (Config.ConfigHold, docs/operator.md, "Fleets"): kept, shown on
// /status, applied when the window opens. Drift correction and health
// go on meanwhile.
type ConfigHold struct {
	held func() (reason string, held bool)
	// holding is signalled when an edit starts being held: releaseConfig
	// rechecks the window only while one is
	holding chan struct{}

	mu      sync.Mutex
	data    map[string]string // nil: none held
	version string
	reason  string
	since   time.Time
}

// NewConfigHold holds edits while held says so.
func NewConfigHold(held func() (reason string, held bool)) *ConfigHold {
	return &ConfigHold{held: held, holding: make(chan struct{}, 1)}
}

// Held is the edit held: why and since when (ok false: none).
func (h *ConfigHold) Held() (reason string, since time.Time, ok bool) {
	if h == nil {
		return "", time.Time{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reason, h.since, h.data != nil
}

// holdConfig keeps an edit the window holds and reports whether it did.
// Data the running tree has already (a hook's own write echoed back) is
// no edit and passes.
func (s *steps) holdConfig(data map[string]string, version string) bool {
	h := s.cfg.ConfigHold
	if h == nil {
		return false
	}
	reason, held := h.held()
	t := s.trees.Load()
	if held && t != nil && (!runstate.NewerVersion(version, t.ConfigVersion) || maps.Equal(data, t.ClusterData)) {
		held = false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !held {
		h.data = nil
		return false
	}
	if h.data == nil {
		select {
		case h.holding <- struct{}{}:
		default:
		}
		h.since = s.cfg.Now().UTC()
		s.logger.Info("ConfigMap change held by a change window; applied when it opens", "reason", reason)
	}
	h.data, h.version, h.reason = data, version, reason
	return true
}

// releaseConfig applies the held edit once the window lets it through.
func (s *steps) releaseConfig(ctx context.Context) {
	h := s.cfg.ConfigHold
	if h == nil {
		return
	}
	for {
		h.mu.Lock()
		idle := h.data == nil
		h.mu.Unlock()
		if idle {
			// nothing held: no wake-up until an edit is
			select {
			case <-ctx.Done():
				return
			case <-h.holding:
			}
		}
		// lifecycle's clock (Config.After), which tests drive
		select {
		case <-ctx.Done():
			return
		case <-s.cfg.After(configHeldRecheck):
		}
		h.mu.Lock()
		data, version := h.data, h.version
		h.mu.Unlock()
		if data == nil {
			continue
		}
		if reason, held := h.held(); held {
			h.mu.Lock()
			h.reason = reason
			h.mu.Unlock()
			continue
		}
		s.logger.Info("the change window opened: applying the held ConfigMap change")
		s.onConfigChange(ctx, data, version)
	}
}
