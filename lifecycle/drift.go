package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"

	"github.com/addonops/addon-operator/drift"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// DriftDetector checks a module's release against the cluster, corrects
// and shows its drift (docs/operator.md, "Drift").
type DriftDetector interface {
	Check(ctx context.Context, release string) (drift.Report, bool, error)
	Correct(ctx context.Context, release string) (drift.Report, error)
	Diff(ctx context.Context, release string) (string, error)
}

var _ DriftDetector = (*drift.Detector)(nil)

const kindDriftCorrect queue.Kind = "DriftCorrect"

// DriftStatus is a module's drift on /status: the objects of its release
// that differ from the chart, with the paths of the fields that do (never
// their values).
type DriftStatus struct {
	// Mode is what is done about it: warn or correct (off in maintenance).
	Mode    string         `json:"mode"`
	Objects []drift.Object `json:"objects"`
}

// driftReports are the modules' last drift checks, under their own lock.
type driftReports struct {
	mu     sync.Mutex
	by     map[string]DriftStatus
	warned map[string]string // the drift last recorded as an Event, by module
}

func (r *driftReports) get(name string) *DriftStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.by[name]
	if !ok {
		return nil
	}
	return &st
}

// set records a module's report; it returns the Event message when the
// drift is new (not what was last recorded), "" otherwise.
func (r *driftReports) set(name string, st *DriftStatus) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by, r.warned = map[string]DriftStatus{}, map[string]string{}
	}
	if st == nil || len(st.Objects) == 0 {
		delete(r.by, name)
		delete(r.warned, name)
		return ""
	}
	r.by[name] = *st
	msg := driftMessage(name, st.Objects)
	if r.warned[name] == msg {
		return ""
	}
	r.warned[name] = msg
	return msg
}

// driftMessage names the drifted objects and fields, bounded for an Event.
func driftMessage(module string, objs []drift.Object) string {
	parts := make([]string, 0, len(objs))
	for _, o := range objs {
		parts = append(parts, o.Ref()+" ("+strings.Join(o.Fields, ", ")+")")
	}
	msg := fmt.Sprintf("module %s: %d object(s) differ from the chart: %s", module, len(objs), strings.Join(parts, "; "))
	if len(msg) > 1000 {
		msg = msg[:1000] + "…"
	}
	return msg
}

// driftSteps are the drift checks of the running tree's modules, beside
// auto-healing, and their corrections in "main" (docs/operator.md,
// "Drift"). They read the running tree and the module registry.
type driftSteps struct {
	cfg     Config
	logger  *slog.Logger
	metrics *metrics.Recorder
	trees   *runstate.Trees
	modules *runstate.Modules
	queues  *runstate.Queues
	reports driftReports // the last drift checks
	locks   moduleLocks  // one check or correction of a module at a time
}

// check is the drift check of every ready module with a chart, beside
// auto-healing and on its interval.
func (s *driftSteps) check(ctx context.Context) {
	if s.cfg.Drift == nil {
		return
	}
	model, _ := s.trees.Current()
	if model == nil {
		return
	}
	for _, m := range model.Modules {
		if ctx.Err() != nil {
			return
		}
		s.checkModule(ctx, m)
	}
}

// checkModule checks one module, on the interval or on an edit of its
// objects (driftwatch.go). A drifted module is reported (/status, metric,
// Event once per drift) and, when its mode is correct and it is not in
// maintenance, gets a correction task in "main". A module that is not
// ready, or has no chart, is not checked (its report goes); false says it
// is enabled and not ready yet, so an edit's check waits for it. Two
// checks of one module never overlap.
func (s *driftSteps) checkModule(ctx context.Context, m *loader.Module) bool {
	st := s.modules.Get(m.Name)
	if !st.Enabled || !m.HasChart || st.State != StateReady {
		s.report(ctx, m.Name, nil)
		return !st.Enabled || !m.HasChart
	}
	defer s.locks.lock(m.Name)()
	rep, ok, err := s.cfg.Drift.Check(ctx, m.Name)
	if err != nil {
		// the objects it could check are reported still
		s.logger.Warn("drift check failed", "module", m.Name, "err", err)
		if ctx.Err() != nil || rep.Checked == 0 {
			return true
		}
	}
	if !ok {
		s.report(ctx, m.Name, nil)
		return true
	}
	mode, correct := s.modeOf(m)
	s.report(ctx, m.Name, &DriftStatus{Mode: mode, Objects: rep.Objects})
	if len(rep.Objects) > 0 && correct {
		s.queue(m.Name)
	}
	return true
}

// driftModeOf is a module's mode as /status shows it ("maintenance" when
// in maintenance) and whether its drift is corrected.
func (s *driftSteps) modeOf(m *loader.Module) (string, bool) {
	var data map[string]string
	if t := s.trees.Load(); t != nil {
		data = t.ConfigData
	}
	if inMaint, _ := runstate.Maintenance(data, m); inMaint {
		return "maintenance", false
	}
	mode, err := runstate.DriftMode(data, m, s.cfg.DriftMode)
	if err != nil {
		mode = s.cfg.DriftMode // refused with the ConfigMap change
	}
	return mode, mode == DriftCorrect
}

// reportDrift records a module's drift (nil: none) on /status and the
// metric, and records an Event for a new one.
func (s *driftSteps) report(ctx context.Context, name string, st *DriftStatus) {
	n := 0
	if st != nil {
		n = len(st.Objects)
	}
	s.metrics.DriftedObjects.WithLabelValues(name).Set(float64(n))
	msg := s.reports.set(name, st)
	if msg == "" {
		return
	}
	s.logger.Warn("release objects differ from the chart", "module", name, "objects", n, "mode", st.Mode, "drift", msg)
	if s.cfg.Events != nil {
		if err := s.cfg.Events.Warning(ctx, "Drifted", msg); err != nil {
			s.logger.Warn("could not record an Event", "module", name, "err", err)
		}
	}
}

// driftCorrectTask puts the chart's fields of a module's drifted objects
// back. It is keyed by module (one waits at most), dropped on failure (the
// next check finds the drift again) and superseded by a reload, so it
// never holds back a newer revision or a ConfigMap edit; it checks again
// when it runs that the module is ready, out of maintenance and in
// correct mode.
func (s *driftSteps) correctTask(name string) *queue.Task {
	return &queue.Task{
		Key: queue.Key{Kind: kindDriftCorrect, Module: name}, Description: name, AllowFailure: true,
		Do: func(ctx context.Context) error { return s.correct(ctx, name) },
	}
}

// queue adds a module's correction to "main" unless one waits there.
func (s *driftSteps) queue(name string) {
	main := s.queues.Main()
	if t := s.correctTask(name); !main.HasQueuedKey(t.Key) {
		main.Add(t)
	}
}

func (s *driftSteps) correct(ctx context.Context, name string) error {
	model, _ := s.trees.Current()
	m := model.Module(name)
	if m == nil {
		return nil
	}
	st := s.modules.Get(name)
	ready := st.Enabled && st.State == StateReady
	if _, correct := s.modeOf(m); !ready || !correct {
		return nil
	}
	defer s.locks.lock(name)()
	rep, err := s.cfg.Drift.Correct(ctx, name)
	if err != nil {
		s.logger.Warn("drift correction failed", "module", name, "err", err)
		return err
	}
	if len(rep.Objects) > 0 {
		refs := make([]string, 0, len(rep.Objects))
		for _, o := range rep.Objects {
			refs = append(refs, o.Ref())
		}
		s.logger.Info("drift corrected: the chart's fields applied again", "module", name, "objects", refs)
	}
	// what /status shows follows at once, not at the next interval
	after, ok, err := s.cfg.Drift.Check(ctx, name)
	if err == nil && ok {
		mode, _ := s.modeOf(m)
		s.report(ctx, name, &DriftStatus{Mode: mode, Objects: after.Objects})
	}
	return nil
}

// driftOf is a module's drift for /status (nil: none, or not checked).
func (s *driftSteps) of(name string) *DriftStatus {
	st := s.reports.get(name)
	if st != nil {
		st.Objects = slices.Clone(st.Objects)
	}
	return st
}

// moduleDiff is the live diff of a module's release (`module diff`).
func (s *driftSteps) moduleDiff(ctx context.Context, name string) (string, error) {
	if s.cfg.Drift == nil {
		return "", &debugError{code: http.StatusNotFound, msg: "drift checks are off"}
	}
	model, _ := s.trees.Current()
	if model == nil || model.Module(name) == nil {
		return "", &debugError{code: http.StatusNotFound, msg: fmt.Sprintf("module %q not found (addon-operator module list shows the modules)", name)}
	}
	diff, err := s.cfg.Drift.Diff(ctx, name)
	if errors.Is(err, drift.ErrNoRelease) {
		return "", &debugError{code: http.StatusNotFound, msg: fmt.Sprintf("module %q has no deployed release", name)}
	}
	return diff, err
}
