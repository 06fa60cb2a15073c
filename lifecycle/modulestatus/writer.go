package modulestatus

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/values"
)

// Trees is the running tree and its announcements (runstate.Trees).
type Trees interface {
	Load() *runstate.Tree
	Changed() (uint64, <-chan struct{})
}

// Modules is the module registry and its announcements (runstate.Modules).
type Modules interface {
	All() map[string]runstate.Module
	Changed() (uint64, <-chan struct{})
}

// Health is the modules' release health (health.Tracker).
type Health interface {
	Module(module string) (health.ModuleHealth, bool)
}

// Drift is how many objects of a module the last drift check found
// drifted (lifecycle adapts driftcheck.Checker).
type Drift interface {
	Drifted(module string) int
}

// Client writes Module objects in one namespace (kube.go: the API
// server's; the tests' fakes).
type Client interface {
	// List is the names of the Module objects there.
	List(ctx context.Context) ([]string, error)
	// Write creates the object when it is missing and sets its status,
	// observed at the object's generation (set by Write on st).
	Write(ctx context.Context, name string, st *Status) error
	Delete(ctx context.Context, name string) error
}

var (
	_ Trees   = (*runstate.Trees)(nil)
	_ Modules = (*runstate.Modules)(nil)
	_ Health  = (*health.Tracker)(nil)
)

// Options are the parts a Writer reads. Trees, Modules and Client are
// required; Health and Drift may be nil.
type Options struct {
	Trees   Trees
	Modules Modules
	Health  Health
	Drift   Drift
	Client  Client
	// MinInterval is the least time between two passes (default 1s): a
	// burst of changes is one pass.
	MinInterval time.Duration
	// BusyInterval is the least time between two passes while a converge
	// is under way, some module waiting or running (default 5s): the
	// writes then go to the API server the converge itself waits on.
	BusyInterval time.Duration
	// PendingGrace is how long a module waiting its turn in a converge
	// goes without an object (default 1m): one whose converge stalls (a
	// module ahead of it failing and retried) is then listed, Pending.
	PendingGrace time.Duration
	// Relist is how often a pass lists the objects again (default 1m):
	// one deleted by hand is written again though its status did not
	// change.
	Relist time.Duration
	// Resync re-reads health and drift, which announce nothing (default
	// 10s); a pass with nothing changed writes nothing.
	Resync time.Duration
	Logger *slog.Logger
	// Now and After are the clock (default time.Now, time.After):
	// conditions' lastTransitionTime and Run's waits, which tests drive
	// without sleeping, as lifecycle's Config.Now and After.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
}

// Writer keeps the Module objects in step with the running tree.
type Writer struct {
	opts    Options
	written map[string]Status // what the API server has, as last written
	// listedAt: when the namespace's objects were last listed (Relist;
	// zero: never)
	listedAt time.Time
	// readyOn is, by module, its inputs when a Ready status was last
	// written (rerun)
	readyOn map[string]string
	// busy: the last pass saw a converge under way
	busy bool
	// waiting is, by module, when a pass first left it without an object
	// because it waited its turn (PendingGrace)
	waiting map[string]time.Time
}

// New prepares a Writer.
func New(opts Options) *Writer {
	if opts.MinInterval <= 0 {
		opts.MinInterval = time.Second
	}
	if opts.BusyInterval <= 0 {
		opts.BusyInterval = max(5*time.Second, opts.MinInterval)
	}
	if opts.Resync <= 0 {
		opts.Resync = 10 * time.Second
	}
	if opts.Relist <= 0 {
		opts.Relist = time.Minute
	}
	if opts.PendingGrace <= 0 {
		opts.PendingGrace = time.Minute
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
	return &Writer{opts: opts, written: map[string]Status{}, readyOn: map[string]string{}, waiting: map[string]time.Time{}}
}

// Run writes a pass at each announcement (at most one per MinInterval,
// or BusyInterval while a converge is under way) and at the latest Resync
// after the last pass, until ctx ends. A failed pass is retried at the
// next.
func (w *Writer) Run(ctx context.Context) {
	for {
		_, treeCh := w.opts.Trees.Changed()
		_, modCh := w.opts.Modules.Changed()
		if err := w.Pass(ctx); err != nil && ctx.Err() == nil {
			w.opts.Logger.Warn("module objects", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-treeCh:
		case <-modCh:
		case <-w.opts.After(w.opts.Resync):
		}
		// the changes of a converge come in bursts: one pass for each
		wait := w.opts.MinInterval
		if w.busy {
			wait = w.opts.BusyInterval
		}
		select {
		case <-ctx.Done():
			return
		case <-w.opts.After(wait):
		}
	}
}

// Pass writes the status of each module of the running tree that changed
// since it was last written, and deletes the objects of modules that left
// it. It returns the first error; what it wrote stays written.
func (w *Writer) Pass(ctx context.Context) error {
	t := w.opts.Trees.Load()
	if t == nil || t.Model == nil {
		return nil
	}
	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if w.listedAt.IsZero() || w.opts.Now().Sub(w.listedAt) >= w.opts.Relist {
		if err := w.relist(ctx); err != nil {
			if w.listedAt.IsZero() {
				return err
			}
			keep(err) // a relist: this pass writes on what it knows
		}
	}
	states := w.opts.Modules.All()
	w.busy = false
	for _, st := range states {
		if st.Enabled && (st.State == runstate.StatePending || st.State == runstate.StateRunning) {
			w.busy = true
			break
		}
	}
	inTree := make(map[string]bool, len(t.Model.Modules))
	now := metav1.NewTime(w.opts.Now().Truncate(time.Second))
	for _, m := range t.Model.Modules {
		inTree[m.Name] = true
		in := input{weight: m.Order, ref: t.Rev.Ref, sha: t.Rev.Commit}
		in.state, in.known = states[m.Name]
		if w.opts.Health != nil {
			if h, ok := w.opts.Health.Module(m.Name); ok {
				in.health = &h
			}
		}
		if w.opts.Drift != nil {
			in.drift = w.opts.Drift.Drifted(m.Name)
		}
		st := build(in)
		old, had := w.written[m.Name]
		if !had && w.busy && st.Enabled && st.State == string(runstate.StatePending) {
			// waiting its turn in a converge: created once it runs, or
			// once it has waited PendingGrace (docs/operator.md, "Module
			// objects")
			since, ok := w.waiting[m.Name]
			if !ok {
				since = w.opts.Now()
				w.waiting[m.Name] = since
			}
			if w.opts.Now().Sub(since) < w.opts.PendingGrace {
				continue
			}
		}
		delete(w.waiting, m.Name)
		// inputs are read only where they decide, and once: a pass over
		// unchanged modules (the resync) marshals no values
		inputs := sync.OnceValue(func() string { return inputsOf(t, m) })
		if had && rerun(old, st) && w.readyOn[m.Name] == inputs() {
			// a re-run of what it was Ready on (a reload after a global
			// change, a resync): still Ready, so a no-change re-converge
			// writes nothing (docs/operator.md, "Module objects")
			st.State, st.Reason, st.LastError = old.State, old.Reason, old.LastError
			st.Conditions = conditions(st)
		}
		var oldp *Status
		if had {
			oldp = &old
		}
		carry(&st, oldp, old.ObservedGeneration, now)
		if had && reflect.DeepEqual(st, old) {
			continue
		}
		if err := w.opts.Client.Write(ctx, m.Name, &st); err != nil {
			keep(err)
			continue
		}
		w.written[m.Name] = st
		if st.State == string(runstate.StateReady) {
			w.readyOn[m.Name] = inputs()
		}
	}
	for name := range w.written {
		if inTree[name] {
			continue
		}
		if err := w.opts.Client.Delete(ctx, name); err != nil {
			keep(err)
			continue
		}
		delete(w.written, name)
		delete(w.readyOn, name)
	}
	for name := range w.waiting {
		if !inTree[name] {
			delete(w.waiting, name)
		}
	}
	return firstErr
}

// inputsOf is what a module's run depends on of its own: its files, its
// sections of the ConfigMap (with config in git) and of the common values
// file ($MODULES_DIR/values.yaml, outside its directory): a re-run on the
// same inputs stays Ready (rerun).
func inputsOf(t *runstate.Tree, m *loader.Module) string {
	in := m.Hash + "\x00" + t.ConfigData[m.Key] + "\x00" + t.ConfigData[values.EnabledKey(m.Key)]
	if common := t.Model.Values.Common; common != nil {
		// encoding/json sorts map keys: equal sections, equal text
		b, _ := json.Marshal([]any{common[m.Key], common[values.EnabledKey(m.Key)]})
		in += "\x00" + string(b)
	}
	return in
}

// relist lists the objects: those a previous run left are unknown, so
// rewritten or deleted; those deleted by hand are written again.
func (w *Writer) relist(ctx context.Context) error {
	names, err := w.opts.Client.List(ctx)
	if err != nil {
		return err
	}
	there := make(map[string]bool, len(names))
	for _, n := range names {
		there[n] = true
		if _, ok := w.written[n]; !ok {
			w.written[n] = Status{}
		}
	}
	for n := range w.written {
		if !there[n] {
			delete(w.written, n)
		}
	}
	w.listedAt = w.opts.Now()
	return nil
}

// rerun: the module was written Ready and now waits or runs again, enabled
// as it was.
func rerun(old, now Status) bool {
	return old.State == string(runstate.StateReady) && old.Enabled == now.Enabled &&
		(now.State == string(runstate.StatePending) || now.State == string(runstate.StateRunning))
}
