package lifecycle

import (
	"context"
	"errors"

	"github.com/addonops/addon-operator/queue"
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

// kindRevisionApplied ends a tree change that purges modules and runs none.
const kindRevisionApplied queue.Kind = "RevisionApplied"

// errPurgeGuard marks a revision the purge guard holds back.
var errPurgeGuard = errors.New("purge guard")

// reportRevision tells Config.OnRevisionState, if set, of a state of
// commit ("" without git: nothing to tell). Never under the lock.
func (c *core) reportRevision(commit, module, state, reason string) {
	if c.cfg.OnRevisionState == nil || commit == "" {
		return
	}
	c.cfg.OnRevisionState(RevisionState{Commit: commit, Module: module, State: state, Reason: reason})
}

// reportOutcome tells what a finished reload left of the adopted
// revision: failed while an enabled module is Failed (a release conflict
// leaves one so and moves on), else applied.
func (c *core) reportOutcome() {
	c.mu.Lock()
	commit, reason := c.rev.Commit, ""
	for _, name := range c.enabledModules {
		if st := c.modules[name]; st != nil && st.state == StateFailed {
			reason = "module " + name + ": see /status"
			break
		}
	}
	c.mu.Unlock()
	if reason != "" {
		c.reportRevision(commit, "", RevisionFailed, reason)
		return
	}
	c.reportRevision(commit, "", RevisionApplied, "")
}

// reportFailure tells that a task of the adopted revision failed: the
// revision, and the module when there is one.
func (c *core) reportFailure(module string, err error) {
	if c.cfg.OnRevisionState == nil || errors.Is(err, context.Canceled) {
		return
	}
	commit := c.currentCommit()
	reason := failureReason(err)
	if module != "" {
		c.reportRevision(commit, module, RevisionFailed, reason)
		reason = "module " + module + ": " + reason
	}
	c.reportRevision(commit, "", RevisionFailed, reason)
}

func (c *core) currentCommit() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rev.Commit
}

// failureReason is what a commit status may say of err: a hook error's
// line (the hook, its binding and exit status) or a pointer to /status,
// where the whole message is for those who may read it.
func failureReason(err error) string {
	var he *hookError
	if errors.As(err, &he) {
		return he.Error()
	}
	return "see /status"
}
