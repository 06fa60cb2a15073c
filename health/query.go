package health

import "time"

// Module is a module's health; false when it is not tracked (disabled,
// or not deployed yet).
func (t *Tracker) Module(name string) (ModuleHealth, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.modules[name]
	if m == nil || !m.reported {
		return ModuleHealth{}, false
	}
	return m.health, true
}

// Watched is a module's health, its progress timeout, and a channel
// closed at its next status change or when it stops being tracked: what a
// health wait holds on (docs/operator.md, "Health waits").
type Watched struct {
	Health  ModuleHealth
	Timeout time.Duration
	Changed <-chan struct{}
}

// Watch is a module's health with a channel closed at its next change;
// false when it is not tracked.
func (t *Tracker) Watch(name string) (Watched, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.modules[name]
	if m == nil || !m.reported {
		return Watched{}, false
	}
	if m.changed == nil {
		m.changed = make(chan struct{})
	}
	timeout := m.timeout
	if timeout <= 0 { // its release was never read
		timeout = t.opts.ProgressTimeout
	}
	return Watched{Health: m.health, Timeout: timeout, Changed: m.changed}, true
}

// Modules is every tracked module's health, by name.
func (t *Tracker) Modules() map[string]ModuleHealth {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]ModuleHealth, len(t.modules))
	for name, m := range t.modules {
		if m.reported {
			out[name] = m.health
		}
	}
	return out
}

// Overall is the operator's health: the worst of its modules' (Healthy
// with none).
func (t *Tracker) Overall() Status {
	worst := Healthy
	for _, h := range t.Modules() {
		if rank(h.Status) > rank(worst) {
			worst = h.Status
		}
	}
	return worst
}
