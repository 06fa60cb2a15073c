package health

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
)

// ObjectReader reads one object from the API server (kube.Watcher.Get);
// a missing object is nil.
type ObjectReader interface {
	Get(ctx context.Context, ref kube.ObjectRef) (map[string]any, error)
}

var _ ObjectReader = (*kube.Watcher)(nil)

// refreshParallel bounds Refresh's reads of one module's objects.
const refreshParallel = 4

// Refresh reads a module's objects from the API server once and takes
// them as their watches would, so a Helm upgrade that just ran counts
// before its watch events arrive; a watch event older than what it read
// is then ignored. A health wait reads its module's own writes this way
// (docs/operator.md, "Health waits"): without it, the wait could see the
// Current of the generation before the upgrade. Objects whose watch has
// not listed yet are left to that list. Without Options.Objects it does
// nothing.
func (t *Tracker) Refresh(ctx context.Context, name string) error {
	if t.opts.Objects == nil {
		return nil
	}
	t.mu.Lock()
	m := t.modules[name]
	var objs []*object
	var told []uint64 // what each object's watch had told before its read
	if m != nil {
		objs = slices.Clone(m.objects)
		for _, o := range objs {
			told = append(told, o.events)
		}
	}
	t.mu.Unlock()
	type read struct {
		obj map[string]any
		err error
	}
	reads := make([]read, len(objs))
	sem := make(chan struct{}, refreshParallel)
	var wg sync.WaitGroup
	for i, o := range objs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			obj, err := t.opts.Objects.Get(ctx, o.ref)
			reads[i] = read{obj, err}
		})
	}
	wg.Wait()
	now := t.opts.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if m == nil || t.modules[name] != m {
		return nil // removed or replaced meanwhile
	}
	var errs []error
	for i, o := range objs {
		switch r := reads[i]; {
		case o.unresolved != "" || o.w == nil || !o.w.synced || !slices.Contains(m.objects, o):
		case o.events != told[i]:
			// the watch told something during the read, maybe newer than it
		case r.err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", o.ref, r.err))
		case r.obj == nil:
			o.observe(false, summary{}, now)
		default:
			s, _ := Summarize(r.obj).(summary)
			// a hand edit the read found first is still one
			if o.edited(loader.EventModified, s) && t.modules[o.m.name] == o.m {
				t.out.edit(o.m.name)
			}
			o.observe(true, s, now)
			o.fresh, o.freshUID = s.Generation, s.UID
		}
	}
	t.update(m, now)
	return errors.Join(errs...)
}

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
