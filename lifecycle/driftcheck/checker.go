package driftcheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/addonops/addon-operator/drift"
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/lifecycle/taskkind"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// Detector checks a module's release against the cluster, corrects and
// shows its drift (docs/operator.md, "Drift").
type Detector interface {
	Check(ctx context.Context, release string) (drift.Report, bool, error)
	Correct(ctx context.Context, release string) (drift.Report, error)
	Diff(ctx context.Context, release string) (string, error)
}

var _ Detector = (*drift.Detector)(nil)

// Events records a Kubernetes Event about a module (on its Module object
// or the values ConfigMap: modulestatus.Events).
type Events interface {
	ModuleWarning(ctx context.Context, module, reason, message string) error
}

// KindCorrect is the correction task's kind in "main": keyed by module, so
// one waits at most, and superseded by a reload (lifecycle's events.go).
const KindCorrect = taskkind.DriftCorrect

// The refusals of Diff; the HTTP layer maps them to 404.
var (
	// ErrNoDetector: drift checks are off (no Detector).
	ErrNoDetector = errors.New("drift checks are off")
	// ErrUnknownModule: the running tree has no module of that name.
	ErrUnknownModule = errors.New("not found (addon-operator module list shows the modules)")
	// ErrNotDeployed: the module has no deployed release.
	ErrNotDeployed = errors.New("has no deployed release")
)

// Options configure a Checker.
type Options struct {
	// Detector checks the releases (nil: no drift checks).
	Detector Detector
	// Mode is what is done about drift by default, runstate.DriftWarn or
	// runstate.DriftCorrect (""), which a module's <module>Drift ConfigMap
	// key overrides.
	Mode string
	// The running state the checks read and the queues corrections go to.
	Trees   *runstate.Trees
	Modules *runstate.Modules
	Queues  *runstate.Queues
	Metrics *metrics.Recorder
	// Events records a new drift once (nil: none).
	Events Events
	Logger *slog.Logger
	// Now and After are the clock of the checks on edits (default: time's).
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	// Quiet and Spacing bound the checks on edits (0: DefaultQuiet,
	// DefaultSpacing).
	Quiet, Spacing time.Duration
	// Inbox, if set, is where the health tracker tells edits; Run takes
	// them as it takes Edited's.
	Inbox *Inbox
	// Held, if set, says while no drift is corrected, whatever the mode
	// (the source is suspended): it is reported as in warn mode.
	Held func() bool
}

// ModeSuspended is a module's drift mode on /status while Options.Held
// says so: drift is reported, not corrected.
const ModeSuspended = "suspended"

// Event checks' bounds (docs/operator.md, "Drift"): a module's check runs
// once its objects were quiet for DefaultQuiet (a rollout, or a burst of
// edits, is one check), at the latest DefaultSpacing after the first edit
// not checked yet (a controller that writes every second is still
// checked), and never sooner than DefaultSpacing after its last event
// check (such a controller costs one check per DefaultSpacing).
const (
	DefaultQuiet   = 2 * time.Second
	DefaultSpacing = 10 * time.Second
)

// Checker is the drift checks of the running tree's modules, on the
// auto-healing interval (CheckAll) and on edits (Edited, Run), and their
// corrections in "main".
type Checker struct {
	opts    Options
	reports reports     // the last drift checks
	locks   moduleLocks // one check or correction of a module at a time
	edits   *watch
}

// New prepares a Checker; Run runs its checks on edits.
func New(opts Options) *Checker {
	if opts.Mode == "" {
		opts.Mode = runstate.DriftCorrect
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
	if opts.Quiet <= 0 {
		opts.Quiet = DefaultQuiet
	}
	if opts.Spacing <= 0 {
		opts.Spacing = DefaultSpacing
	}
	c := &Checker{opts: opts}
	c.edits = newWatch(c)
	return c
}

// CheckAll is the drift check of every ready module with a chart, beside
// auto-healing and on its interval.
func (c *Checker) CheckAll(ctx context.Context) {
	if c.opts.Detector == nil {
		return
	}
	model, _ := c.opts.Trees.Current()
	if model == nil {
		return
	}
	for _, m := range model.Modules {
		if ctx.Err() != nil {
			return
		}
		c.checkModule(ctx, m)
	}
}

// checkModule checks one module, on the interval or on an edit of its
// objects (watch.go). A drifted module is reported (/status, metric,
// Event once per drift) and, when its mode is correct and it is not in
// maintenance, gets a correction task in "main". A module that is not
// ready, or has no chart, is not checked (its report goes); false says it
// is enabled and not ready yet, so an edit's check waits for it. Two
// checks of one module never overlap.
func (c *Checker) checkModule(ctx context.Context, m *loader.Module) bool {
	st := c.opts.Modules.Get(m.Name)
	if !st.Enabled || !m.HasChart || st.State != runstate.StateReady {
		c.report(ctx, m.Name, nil)
		return !st.Enabled || !m.HasChart
	}
	defer c.locks.lock(m.Name)()
	rep, ok, err := c.opts.Detector.Check(ctx, m.Name)
	if err != nil {
		// the objects it could check are reported still
		c.opts.Logger.Warn("drift check failed", "module", m.Name, "err", err)
		if ctx.Err() != nil || rep.Checked == 0 {
			return true
		}
	}
	if !ok {
		c.report(ctx, m.Name, nil)
		return true
	}
	mode, correct := c.modeOf(m)
	c.report(ctx, m.Name, &Status{Mode: mode, Objects: rep.Objects})
	if len(rep.Objects) > 0 && correct {
		c.queue(m.Name)
	}
	return true
}

// modeOf is a module's mode as /status shows it ("maintenance" when in
// maintenance) and whether its drift is corrected.
func (c *Checker) modeOf(m *loader.Module) (string, bool) {
	var data map[string]string
	if t := c.opts.Trees.Load(); t != nil {
		data = t.ConfigData
	}
	if inMaint, _ := runstate.Maintenance(data, m); inMaint {
		return "maintenance", false
	}
	if c.opts.Held != nil && c.opts.Held() {
		return ModeSuspended, false
	}
	mode, err := runstate.DriftMode(data, m, c.opts.Mode)
	if err != nil {
		mode = c.opts.Mode // refused with the ConfigMap change
	}
	return mode, mode == runstate.DriftCorrect
}

// report records a module's drift (nil: none) on /status and the metric,
// and records an Event for a new one.
func (c *Checker) report(ctx context.Context, name string, st *Status) {
	n := 0
	if st != nil {
		n = len(st.Objects)
	}
	c.opts.Metrics.DriftedObjects.WithLabelValues(name).Set(float64(n))
	msg := c.reports.set(name, st)
	if msg == "" {
		return
	}
	c.opts.Logger.Warn("release objects differ from the chart", "module", name, "objects", n, "mode", st.Mode, "drift", msg)
	if c.opts.Events != nil {
		if err := c.opts.Events.ModuleWarning(ctx, name, "Drifted", msg); err != nil {
			c.opts.Logger.Warn("could not record an Event", "module", name, "err", err)
		}
	}
}

// correctTask puts the chart's fields of a module's drifted objects back.
// It is keyed by module (one waits at most), dropped on failure (the next
// check finds the drift again) and superseded by a reload, so it never
// holds back a newer revision or a ConfigMap edit; it checks again when it
// runs that the module is ready, out of maintenance and in correct mode.
func (c *Checker) correctTask(name string) *queue.Task {
	return &queue.Task{
		Key: queue.Key{Kind: KindCorrect, Module: name}, Description: name, AllowFailure: true,
		Do: func(ctx context.Context) error { return c.correct(ctx, name) },
	}
}

// queue adds a module's correction to "main" unless one waits there.
func (c *Checker) queue(name string) {
	main := c.opts.Queues.Main()
	if t := c.correctTask(name); !main.HasQueuedKey(t.Key) {
		main.Add(t)
	}
}

func (c *Checker) correct(ctx context.Context, name string) error {
	model, _ := c.opts.Trees.Current()
	m := model.Module(name)
	if m == nil {
		return nil
	}
	st := c.opts.Modules.Get(name)
	ready := st.Enabled && st.State == runstate.StateReady
	if _, correct := c.modeOf(m); !ready || !correct {
		return nil
	}
	defer c.locks.lock(name)()
	rep, err := c.opts.Detector.Correct(ctx, name)
	if err != nil {
		c.opts.Logger.Warn("drift correction failed", "module", name, "err", err)
		return err
	}
	if len(rep.Objects) > 0 {
		refs := make([]string, 0, len(rep.Objects))
		for _, o := range rep.Objects {
			refs = append(refs, o.Ref())
		}
		c.opts.Logger.Info("drift corrected: the chart's fields applied again", "module", name, "objects", refs)
	}
	// what /status shows follows at once, not at the next interval
	after, ok, err := c.opts.Detector.Check(ctx, name)
	if err == nil && ok {
		mode, _ := c.modeOf(m)
		c.report(ctx, name, &Status{Mode: mode, Objects: after.Objects})
	}
	return nil
}

// Of is a module's drift for /status (nil: none, or not checked).
func (c *Checker) Of(name string) *Status { return c.reports.get(name) }

// Diff is the live diff of a module's release (`module diff`); it refuses
// with ErrNoDetector, ErrUnknownModule or ErrNotDeployed.
func (c *Checker) Diff(ctx context.Context, name string) (string, error) {
	if c.opts.Detector == nil {
		return "", ErrNoDetector
	}
	model, _ := c.opts.Trees.Current()
	if model == nil || model.Module(name) == nil {
		return "", fmt.Errorf("module %q %w", name, ErrUnknownModule)
	}
	diff, err := c.opts.Detector.Diff(ctx, name)
	if errors.Is(err, drift.ErrNoRelease) {
		return "", fmt.Errorf("module %q %w", name, ErrNotDeployed)
	}
	return diff, err
}

// Edited notes an edit of a module's release objects (the health
// tracker's OnEdited): the module is checked within seconds by Run. It
// never blocks.
func (c *Checker) Edited(module string) { c.edits.edited(module) }

// Run runs the checks on edits until ctx ends, on its own goroutine and
// clock: never in "main", and one at a time with the interval's check.
func (c *Checker) Run(ctx context.Context) { c.edits.loop(ctx) }
