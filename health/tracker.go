package health

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
)

// Monitor is one watch's view of its objects (kube.Monitor).
type Monitor interface {
	Start(ctx context.Context) error
	Stop()
	Snapshot() []kube.ObjectEvent
}

// Watches opens monitors on the operator's shared watches.
type Watches interface {
	Watch(spec kube.MonitorSpec, handler func(kube.ObjectEvent)) (Monitor, error)
}

// Releases reads what a module's release consists of (kube.Helm).
type Releases interface {
	ReleaseObjects(ctx context.Context, name string) (kube.ReleaseObjects, error)
}

var _ Releases = (*kube.Helm)(nil)

// KubeWatches is the Watches of w.
func KubeWatches(w *kube.Watcher) Watches { return kubeWatches{w} }

type kubeWatches struct{ w *kube.Watcher }

func (k kubeWatches) Watch(spec kube.MonitorSpec, handler func(kube.ObjectEvent)) (Monitor, error) {
	m, err := k.w.NewMonitor(spec, handler)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// TimeoutAnnotation in a module's Chart.yaml sets its progress timeout (a
// Go duration, "90s").
const TimeoutAnnotation = "addonops.io/health-progress-timeout"

// Options configure a Tracker.
type Options struct {
	// ProgressTimeout is how long an object may roll out before it counts
	// as Degraded (default 5m); a chart's TimeoutAnnotation overrides it.
	ProgressTimeout time.Duration
	// SyncTimeout bounds a new watch's first list (default 1m); a watch
	// that fails is tried again on the module's next deploy.
	SyncTimeout time.Duration
	// OnTransition hears each change of a module's status, in order, on
	// the Tracker's own goroutine: a slow listener never holds a watch.
	OnTransition func(Transition)
	// Objects reads objects from the API server for Refresh (nil:
	// Refresh does nothing).
	Objects ObjectReader
	// OnEdited hears that an object of a module's release changed beyond
	// its status (edits.go), on the Tracker's own goroutine.
	OnEdited func(module string)
	Logger   *slog.Logger
	// Now and After are the clock (tests drive them).
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
}

// Tracker keeps the health of modules' releases current from the shared
// watches: one monitor per (kind, namespace), however many modules have
// objects there, which keeps only each object's kstatus (Summarize). It
// owns the modules and their objects; two parts keep the rest: open (the
// watches by kind and namespace) and out (what the listeners are told),
// both under the Tracker's mu.
type Tracker struct {
	watches  Watches
	releases Releases
	opts     Options
	logger   *slog.Logger
	wg       sync.WaitGroup

	mu      sync.Mutex
	ctx     context.Context // Run's; nil before it runs
	modules map[string]*module
	open    watchSet
	out     *notifier
}

// module is one tracked module.
type module struct {
	name     string
	revision int
	timeout  time.Duration
	started  time.Time // our last rollout of its release
	objects  []*object
	err      string // why its release could not be read
	health   ModuleHealth
	reported bool      // health was computed once
	next     time.Time // evaluate again then (zero: on events only)
	// changed is closed at the next change of health.Status (or when the
	// module is removed); nil until Watch asks for it
	changed chan struct{}
}

// notify closes m's changed channel, if one was asked for.
func (m *module) notify() {
	if m.changed != nil {
		close(m.changed)
		m.changed = nil
	}
}

type watchKey struct{ apiVersion, kind, namespace string }

// watch is the tracker's monitor of one kind in one namespace.
type watch struct {
	key      watchKey
	mon      Monitor
	byName   map[string][]*object
	starting bool
	synced   bool
	stopped  bool
	err      string
}

// NewTracker makes a Tracker; Run runs it.
func NewTracker(watches Watches, releases Releases, opts Options) *Tracker {
	if opts.ProgressTimeout <= 0 {
		opts.ProgressTimeout = 5 * time.Minute
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.After == nil {
		opts.After = time.After
	}
	return &Tracker{watches: watches, releases: releases, opts: opts, logger: opts.Logger,
		modules: map[string]*module{}, open: watchSet{map[watchKey]*watch{}},
		out: &notifier{onTransition: opts.OnTransition, onEdited: opts.OnEdited, logger: opts.Logger, wake: make(chan struct{}, 1)}}
}

// Run opens the watches, re-evaluates modules whose progress timeout
// passes and tells the listener of transitions until ctx ends.
func (t *Tracker) Run(ctx context.Context) {
	t.mu.Lock()
	t.ctx = ctx
	for _, w := range t.open.keys {
		t.startLocked(w)
	}
	t.mu.Unlock()
	defer t.wg.Wait()
	for {
		t.mu.Lock()
		now := t.opts.Now()
		var next time.Time
		for _, m := range t.modules {
			if !m.next.IsZero() && !m.next.After(now) {
				t.update(m, now)
			}
			if !m.next.IsZero() && (next.IsZero() || m.next.Before(next)) {
				next = m.next
			}
		}
		pending, edited := t.out.drain()
		t.mu.Unlock()
		for _, tr := range pending {
			t.out.tell(tr)
		}
		t.out.tellEdited(edited)
		var timer <-chan time.Time
		if !next.IsZero() {
			timer = t.opts.After(next.Sub(now))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.out.wake:
		case <-timer:
		}
	}
}

// Deployed tells the tracker that a module's run deployed its release at
// revision (0: the module has no chart); upgraded says the run changed it,
// which starts its progress timeout again. Unchanged, the release is not
// read again.
func (t *Tracker) Deployed(ctx context.Context, name string, revision int, upgraded bool) {
	t.mu.Lock()
	m := t.modules[name]
	same := m != nil && m.revision == revision && !upgraded && m.err == ""
	t.mu.Unlock()
	if same {
		return
	}
	var ro kube.ReleaseObjects
	var err error
	if revision > 0 {
		ro, err = t.releases.ReleaseObjects(ctx, name)
	}
	now := t.opts.Now()
	t.mu.Lock()
	m = t.modules[name]
	if m == nil {
		m = &module{name: name, started: now}
		t.modules[name] = m
	}
	if err != nil {
		m.err = "read the release: " + err.Error()
		t.logger.Warn("could not read a module's release for its health", "module", name, "err", err)
		t.update(m, now)
		t.mu.Unlock()
		return
	}
	if upgraded {
		m.started = now
	}
	m.err, m.revision, m.timeout = "", ro.Revision, progressTimeout(name, ro.Annotations, t.opts.ProgressTimeout, t.logger)
	stop := t.setObjects(m, ro, now)
	t.update(m, now)
	t.mu.Unlock()
	for _, mon := range stop {
		mon.Stop()
	}
}

// Removed forgets a module (disabled, deleted or purged).
func (t *Tracker) Removed(name string) {
	t.mu.Lock()
	m := t.modules[name]
	var stop []Monitor
	if m != nil {
		stop = t.setObjects(m, kube.ReleaseObjects{}, t.opts.Now())
		delete(t.modules, name)
		m.notify()
	}
	t.mu.Unlock()
	for _, mon := range stop {
		mon.Stop()
	}
}

// progressTimeout is a module's progress timeout: its chart's annotation,
// or def.
func progressTimeout(name string, annotations map[string]string, def time.Duration, logger *slog.Logger) time.Duration {
	v, ok := annotations[TimeoutAnnotation]
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		logger.Warn("Chart.yaml annotation "+TimeoutAnnotation+" is not a positive duration; using the default",
			"module", name, "value", v, "default", def)
		return def
	}
	return d
}

// setObjects makes ro's objects the module's: objects it keeps keep what
// is known of them; watches no object needs any more are returned, to be
// stopped once the lock is released (Stop waits for their handlers).
func (t *Tracker) setObjects(m *module, ro kube.ReleaseObjects, now time.Time) []Monitor {
	old := make(map[kube.ObjectRef]*object, len(m.objects))
	for _, o := range m.objects {
		old[o.ref] = o
	}
	objects := make([]*object, 0, len(ro.Objects)+len(ro.Unresolved))
	fresh := map[*watch][]*object{}
	for _, ref := range ro.Objects {
		if o := old[ref]; o != nil && o.unresolved == "" {
			delete(old, ref)
			objects = append(objects, o)
			t.startLocked(o.w) // its watch's first list failed: try again
			continue
		}
		o := &object{ref: ref, m: m}
		o.w = t.open.attach(o)
		if !o.w.starting && !o.w.synced {
			// a new watch, or one whose first list failed: (re)start it
			t.startLocked(o.w)
		}
		objects = append(objects, o)
		fresh[o.w] = append(fresh[o.w], o)
	}
	for ref, why := range ro.Unresolved {
		objects = append(objects, &object{ref: ref, m: m, unresolved: why})
	}
	var stop []Monitor
	for _, o := range old {
		if mon := t.open.detach(o); mon != nil {
			stop = append(stop, mon)
		}
	}
	m.objects = objects
	for w, objs := range fresh {
		if !w.synced {
			continue
		}
		// a watch that runs already: what it has of them now
		t.load(w, objs, now)
	}
	return stop
}

// startLocked opens w's monitor in the background once Run runs.
func (t *Tracker) startLocked(w *watch) {
	if t.ctx == nil || w.starting || w.synced || w.stopped {
		return
	}
	w.starting, w.err = true, ""
	ctx := t.ctx
	t.wg.Go(func() { t.start(ctx, w) })
}

func (t *Tracker) start(ctx context.Context, w *watch) {
	spec := kube.MonitorSpec{Name: "health", APIVersion: w.key.apiVersion, Kind: w.key.kind,
		Summarize: Summarize, SyncTimeout: t.opts.SyncTimeout}
	if w.key.namespace != "" {
		spec.Namespaces = []string{w.key.namespace}
	}
	mon, err := t.watches.Watch(spec, func(ev kube.ObjectEvent) { t.onEvent(w, ev) })
	if err == nil {
		err = mon.Start(ctx)
	}
	t.mu.Lock()
	w.starting = false
	if w.stopped || ctx.Err() != nil {
		t.mu.Unlock()
		if mon != nil {
			mon.Stop()
		}
		return
	}
	now := t.opts.Now()
	if err != nil {
		w.err = err.Error()
		t.logger.Warn("health watch failed; tried again on the module's next deploy", "kind", w.key.kind, "namespace", w.key.namespace, "err", err)
	} else {
		w.mon, w.synced = mon, true
	}
	var objs []*object
	for _, os := range w.byName {
		objs = append(objs, os...)
	}
	if w.synced {
		t.load(w, objs, now)
	} else {
		t.updateOf(objs, now)
	}
	t.mu.Unlock()
}

// load reads objs from w's snapshot (under mu: a watch event that comes
// meanwhile waits, and is newer than the snapshot).
func (t *Tracker) load(w *watch, objs []*object, now time.Time) {
	want := make(map[string]bool, len(objs))
	for _, o := range objs {
		want[o.ref.Name] = true
	}
	got := map[string]summary{}
	for _, ev := range w.mon.Snapshot() {
		if want[ev.Name] {
			got[ev.Name], _ = ev.FilterResult.(summary)
		}
	}
	for _, o := range objs {
		s, ok := got[o.ref.Name]
		o.events++
		o.observe(ok, s, now)
	}
	t.updateOf(objs, now)
}

// onEvent is the watch's handler: it updates the objects and their
// modules' health without waiting on anything but mu.
func (t *Tracker) onEvent(w *watch, ev kube.ObjectEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	objs := w.byName[ev.Name]
	if !w.synced || len(objs) == 0 {
		return // not ours, or the snapshot at sync covers it
	}
	s, _ := ev.FilterResult.(summary)
	now := t.opts.Now()
	for _, o := range objs {
		if o.edited(ev.Type, s) && t.modules[o.m.name] == o.m {
			t.out.edit(o.m.name)
		}
		o.events++
		o.observe(ev.Type != loader.EventDeleted, s, now)
	}
	t.updateOf(objs, now)
}

// updateOf evaluates the modules objs belong to.
func (t *Tracker) updateOf(objs []*object, now time.Time) {
	var done *module // objs are mostly of one module
	for _, o := range objs {
		if o.m != done && t.modules[o.m.name] == o.m {
			t.update(o.m, now)
			done = o.m
		}
	}
}

// update evaluates m; a changed status is queued for the listener.
func (t *Tracker) update(m *module, now time.Time) {
	h, next := m.evaluate(now)
	m.next = next
	if m.reported && h.Status == m.health.Status {
		h.Since = m.health.Since
		m.health = h
		return
	}
	h.Since = now
	tr := Transition{Module: m.name, Health: h}
	if m.reported {
		tr.From = m.health.Status
	}
	m.health, m.reported = h, true
	m.notify()
	t.out.transition(tr)
}
