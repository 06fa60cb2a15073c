package lifecycle

import (
	"sync"
	"time"
)

// phase is where the reload of the running tree is (docs/lifecycle.md,
// steps 3–8): the tasks of the reload set it as they run, and whoever
// asks whether a reload is under way reads it here, never the queue's
// contents.
type phase int

// Phases of a reload.
const (
	// phaseIdle: no reload runs (before the first, or after one converged).
	phaseIdle phase = iota
	// phaseReloading: 'reload all modules' began: beforeAll hooks.
	phaseReloading
	// phaseDiscovering: discovery decides which modules run.
	phaseDiscovering
	// phaseConverging: the modules run, then afterAll hooks, until
	// ConvergeDone (a module-scoped reload starts here).
	phaseConverging
)

func (p phase) String() string {
	return [...]string{"idle", "reloading", "discovering", "converging"}[p]
}

// reloadPhase owns the reload's phase and its bookkeeping: the phase,
// whether a 'reload all modules' or a module-scoped reload was asked for
// and has not begun, how many revision reports wait, when the reload under
// way began, whether its afterAll hooks changed global values, and
// whether one reload has finished (the operator is ready).
type reloadPhase struct {
	mu            sync.Mutex
	phase         phase
	reloadAsked   bool // a 'reload all modules' waits to begin
	changedAsked  bool // a module-scoped reload waits to run
	reports       int  // RevisionApplied tasks waiting
	start         time.Time
	globalChanged bool
	// readyCh is closed when the first reload finished (the operator is
	// ready; the bindings start global hooks' schedules then)
	readyCh chan struct{}
}

// newReloadPhase is the phase before the first reload (idle).
func newReloadPhase() *reloadPhase { return &reloadPhase{readyCh: make(chan struct{})} }

// askReload: a 'reload all modules' was queued. Its beginning answers it
// (and every one asked before: one reload covers them all).
func (r *reloadPhase) askReload() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reloadAsked = true
}

// askChanged: a module-scoped reload (ReloadChangedModules) was queued;
// changedDone when it ran. A reload that begins replaces it.
func (r *reloadPhase) askChanged()  { r.set(func() { r.changedAsked = true }) }
func (r *reloadPhase) changedDone() { r.set(func() { r.changedAsked = false }) }

// askReport: a RevisionApplied task was queued; reported when it ran.
func (r *reloadPhase) askReport() { r.set(func() { r.reports++ }) }
func (r *reloadPhase) reported()  { r.set(func() { r.reports = max(r.reports-1, 0) }) }

// begin starts a reload in phase p: 'reload all modules' (phaseReloading)
// or the modules a tree changed (phaseConverging).
func (r *reloadPhase) begin(p phase, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p == phaseReloading {
		r.reloadAsked, r.changedAsked = false, false
	}
	r.phase, r.start, r.globalChanged = p, now, false
}

// enter moves the reload under way to phase p.
func (r *reloadPhase) enter(p phase) { r.set(func() { r.phase = p }) }

// changedGlobal: an afterAll hook changed global values in this reload.
func (r *reloadPhase) changedGlobal() { r.set(func() { r.globalChanged = true }) }

// end finishes a reload: how long it took, whether it was the first, and
// whether afterAll hooks changed global values (everything reloads).
func (r *reloadPhase) end(now time.Time) (took time.Duration, first, again bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ready := r.readyCh
	first = !closed(ready)
	if first {
		close(ready)
	}
	r.phase = phaseIdle
	return now.Sub(r.start), first, r.globalChanged
}

// Snapshot of the phase, for the questions below.
func (r *reloadPhase) get() (p phase, reloadAsked, changedAsked bool, reports int, ready bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.phase, r.reloadAsked, r.changedAsked, r.reports, closed(r.readyCh)
}

// convergedCh is closed when the first reload finished.
func (r *reloadPhase) convergedCh() <-chan struct{} {
	return r.readyCh // made by newReloadPhase, never replaced
}

// closed: ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// reloadWaiting: a 'reload all modules' was asked for and has not begun.
func (r *reloadPhase) reloadWaiting() bool {
	_, asked, _, _, _ := r.get()
	return asked
}

// underWay: a reload runs, or one of all modules waits to begin (a tree
// change then runs with it, not alone).
func (r *reloadPhase) underWay() bool {
	p, asked, _, _, _ := r.get()
	return p != phaseIdle || asked
}

// reporting: a reload or a revision report is under way or waits, whose
// end reports the running revision's outcome.
func (r *reloadPhase) reporting() bool {
	p, asked, changed, reports, _ := r.get()
	return p != phaseIdle || asked || changed || reports > 0
}

func (r *reloadPhase) set(fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn()
}
