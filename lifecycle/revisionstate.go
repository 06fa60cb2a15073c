package lifecycle

import (
	"context"
	"errors"
	"sync"

	"github.com/addonops/addon-operator/lifecycle/hookrun"
	"github.com/addonops/addon-operator/lifecycle/runstate"
)

// RevisionState is what Config.OnRevisionState is told about the adopted
// revision, for the commit status (docs/operator.md, "Commit status").
type RevisionState struct {
	Commit string
	// Module is "" for the whole revision.
	Module string
	// State is RevisionApplying, RevisionApplied or RevisionFailed.
	State string
	// Reason is one line for a failure: names and an exit status, never
	// a hook's output or values (docs/security.md, "Who sees what").
	Reason string
}

// Revision states.
const (
	RevisionApplying = "applying"
	RevisionApplied  = "applied"
	RevisionFailed   = "failed"
)

// errPurgeGuard marks a revision the purge guard holds back.
var errPurgeGuard = errors.New("purge guard")

// revisionReporter tells Config.OnRevisionState of the running
// revision's states (docs/operator.md, "Commit status"). It reads the
// running tree and the module registry, never the steps' own state.
type revisionReporter struct {
	on      func(RevisionState)
	trees   *runstate.Trees
	modules *runstate.Modules
	// held: the last discovery's uninstalls wait for a confirmation
	// (purgeGuard.discoveryHeld; nil: never)
	held func() bool

	// last is the running revision's last state told (modules run in
	// parallel, hence the lock)
	mu   sync.Mutex
	last RevisionState
}

// revision tells of a state of commit ("" without git: nothing to tell).
func (r *revisionReporter) revision(commit, module, state, reason string) {
	if r.on == nil || commit == "" {
		return
	}
	s := RevisionState{Commit: commit, Module: module, State: state, Reason: reason}
	if module == "" && commit == r.commit() {
		r.mu.Lock()
		r.last = s
		r.mu.Unlock()
	}
	r.on(s)
}

// told: s is the running revision's last state told.
func (r *revisionReporter) told(s RevisionState) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last == s
}

// outcome tells what a finished reload left of the running revision:
// failed while an enabled module is Failed (a release conflict leaves one
// so and moves on) or the purge guard holds its discovery's uninstalls,
// else applied.
func (r *revisionReporter) outcome() {
	reason := ""
	for _, name := range r.modules.EnabledList() {
		if r.modules.Get(name).State == StateFailed {
			reason = "module " + name + ": see /status"
			break
		}
	}
	if reason == "" && r.held != nil && r.held() {
		// the reload converged without the uninstalls the guard holds
		reason = "held by the purge guard until confirmed (see /status)"
	}
	if reason != "" {
		// a module's terminal failure (a release conflict) was told
		// when it failed; the reload's end says it once more only if
		// something else was told since
		if !r.told(RevisionState{Commit: r.commit(), State: RevisionFailed, Reason: reason}) {
			r.revision(r.commit(), "", RevisionFailed, reason)
		}
		return
	}
	r.revision(r.commit(), "", RevisionApplied, "")
}

// failure tells that a task of the running revision failed: the
// revision, and the module when there is one.
func (r *revisionReporter) failure(module string, err error) {
	if r.on == nil || errors.Is(err, context.Canceled) {
		return
	}
	commit := r.commit()
	reason := failureReason(err)
	if module != "" {
		r.revision(commit, module, RevisionFailed, reason)
		reason = "module " + module + ": " + reason
	}
	r.revision(commit, "", RevisionFailed, reason)
}

// commit is the running revision's commit.
func (r *revisionReporter) commit() string {
	if t := r.trees.Load(); t != nil {
		return t.Rev.Commit
	}
	return ""
}

// failureReason is what a commit status may say of err: a hook error's
// line (the hook, its binding and exit status) or a pointer to /status,
// where the whole message is for those who may read it.
func failureReason(err error) string {
	var he *hookrun.HookError
	if errors.As(err, &he) {
		return he.Error()
	}
	return "see /status"
}
