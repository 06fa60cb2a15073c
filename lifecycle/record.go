package lifecycle

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/addonops/addon-operator/internal/steptime"
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"

	"github.com/addonops/addon-operator/kube"
)

// happened is what a step did, as its outcome tells the recorder.
type happened int

const (
	// a module's run: moduleRan (Release is its Helm step's result) or
	// moduleRunFailed (a failed enabled script is one too)
	moduleRan happened = iota
	moduleRunFailed
	// a module's delete: moduleDeleted (Err is a release conflict, which
	// leaves the module Disabled with its release in place) or
	// moduleDeleteFailed
	moduleDeleted
	moduleDeleteFailed
	// a removed module's release was purged
	modulePurged
	// the step found nothing to do (its module left the tree)
	nothing
	// a global hook of a reload failed
	globalHookFailed
	// the revision Commit is adopted and starts applying
	revisionApplying
	// the revision Commit was refused (Reason says why, in one line)
	revisionRefused
	// a reload (or a tree change that runs nothing) finished: the
	// running revision's outcome
	reloadEnded
)

// outcome is what one step did, returned by the step and applied by the
// recorder in one place: the module registry, the revision reporter,
// health and the metrics (as Flux's summarize processor does for a
// reconcile's result).
type outcome struct {
	What   happened
	Module string
	Err    error
	// Release: a successful run's Helm step (zero without a chart).
	Release kube.Result
	// Started: when a run began (its duration metric); zero: not timed.
	Started time.Time
	// Commit and Reason: a revision's outcome (revisionApplying,
	// revisionRefused).
	Commit, Reason string
	// Again: afterHelm hooks changed the module's values; the step runs
	// it again (not the recorder's to queue).
	Again bool
}

// recorder applies the steps' outcomes (record). It is the one place
// that sets a module's final state after a step, tells the revision
// reporter and the health tracker, and counts failures.
type recorder struct {
	metrics *metrics.Recorder
	modules *runstate.Modules
	report  *revisionReporter // revisionstate.go
	health  HealthTracker     // nil: none
	now     func() time.Time
	failed  runFailures
}

// record applies o and returns its error, for the task to return.
func (r *recorder) record(ctx context.Context, o outcome) error {
	if !o.Started.IsZero() {
		r.metrics.ModuleRan(o.Module, r.now, o.Started)
		steptime.Mark(ctx, steptime.RunMetrics)
	}
	switch o.What {
	case moduleRan:
		r.failed.clear(o.Module)
		r.modules.SetState(o.Module, StateReady, nil)
		r.report.revision(r.report.commit(), o.Module, RevisionApplied, "")
		steptime.Mark(ctx, steptime.Status)
		healthDeployed(ctx, r.health, o.Module, o.Release)
		steptime.Mark(ctx, steptime.Health)
	case moduleRunFailed:
		// not counted: a run cut short by shutdown, nor a release
		// conflict, which has its own gauge (conflict.go)
		if !errors.Is(o.Err, context.Canceled) && !errors.Is(o.Err, kube.ErrNotOurs) {
			r.metrics.ModuleFailed(o.Module, false)
		}
		r.modules.SetState(o.Module, StateFailed, o.Err)
		r.report.failure(o.Module, o.Err)
		r.failed.event(ctx, o.Module, o.Err)
	case moduleDeleted:
		r.failed.clear(o.Module)
		r.modules.SetState(o.Module, StateDisabled, nil)
		healthRemoved(r.health, o.Module)
	case moduleDeleteFailed:
		if errors.Is(o.Err, kube.ErrNotOurs) {
			// a conflict: nothing was deleted, the module is Disabled
			// with the conflict as its error
			r.modules.SetState(o.Module, StateDisabled, o.Err)
			healthRemoved(r.health, o.Module)
			return o.Err
		}
		if !errors.Is(o.Err, context.Canceled) {
			r.metrics.ModuleFailed(o.Module, true)
		}
		r.modules.SetState(o.Module, StateFailed, o.Err)
		r.report.failure(o.Module, o.Err)
	case modulePurged:
		r.failed.clear(o.Module)
		r.metrics.ReleaseConflicts.DeleteLabelValues(o.Module)
		healthRemoved(r.health, o.Module)
	case globalHookFailed:
		r.report.failure("", o.Err)
	case revisionApplying:
		r.report.revision(o.Commit, "", RevisionApplying, "")
	case revisionRefused:
		r.report.revision(o.Commit, "", RevisionFailed, o.Reason)
	case reloadEnded:
		r.report.outcome()
	}
	return o.Err
}

// runFailures records a Warning Event ModuleRunFailed, with the error
// /status shows (the hook's output stays apart: docs/security.md), when a
// module's run fails with a new error: once per error (by its first line) until the
// module runs or is disabled, so retries of the same failure add none
// (docs/operator.md, "Events"). A run cut short by shutdown records none,
// nor does a release conflict, which has its own (conflict.go).
//
// An Event that went to the values ConfigMap because the module had no
// Module object yet (a first run failing before the object is written) is
// recorded again, once, when the object is there: `kubectl describe
// module/NAME` shows it. One whose creation failed is tried again at the
// next failure.
type runFailures struct {
	warn     func(ctx context.Context, module, reason, message string) error // nil: none
	onObject func(module string) bool                                        // nil: always
	mu       sync.Mutex
	last     map[string]recordedFailure // by module
}

// recordedFailure is the first line last recorded and whether it went to
// the module's object.
type recordedFailure struct {
	first    string
	onObject bool
}

func (f *runFailures) event(ctx context.Context, module string, err error) {
	if f.warn == nil || err == nil || errors.Is(err, context.Canceled) || errors.Is(err, kube.ErrNotOurs) {
		return
	}
	msg := err.Error()
	first, _, _ := strings.Cut(msg, "\n")
	onObject := f.onObject == nil || f.onObject(module)
	f.mu.Lock()
	prev, had := f.last[module]
	fresh := !had || prev.first != first || (!prev.onObject && onObject)
	if fresh {
		if f.last == nil {
			f.last = map[string]recordedFailure{}
		}
		f.last[module] = recordedFailure{first: first, onObject: onObject}
	}
	f.mu.Unlock()
	if !fresh {
		return
	}
	if f.warn(ctx, module, "ModuleRunFailed", "module "+module+": "+msg) != nil {
		// not recorded: the next failure tries again
		f.mu.Lock()
		if cur, ok := f.last[module]; ok && cur.first == first {
			if had {
				f.last[module] = prev
			} else {
				delete(f.last, module)
			}
		}
		f.mu.Unlock()
	}
}

func (f *runFailures) clear(module string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.last, module)
}
