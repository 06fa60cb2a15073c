package lifecycle

import (
	"sync"

	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/queue"
)

// revisions are the steps' bookkeeping of the revisions on the way: the
// newest one reported and not yet adopted, and why the last changed tree
// was refused.
type revisions struct {
	mu         sync.Mutex
	incoming   *Revision
	treeError  string
	treeReason string // its TerminalError's reason
}

// offer records a reported revision and returns the queues its reload
// goes to (nil before Run attached them: Run takes it then). The two
// steps share one lock with attach, so a revision reported while Run
// starts is taken by one or the other.
func (r *revisions) offer(rev Revision, queues *runstate.Queues) *queue.Set {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.incoming = &rev
	return queues.Get()
}

// attach publishes Run's queues and returns a revision reported before
// (nil for none).
func (r *revisions) attach(set *queue.Set, queues *runstate.Queues) *Revision {
	r.mu.Lock()
	defer r.mu.Unlock()
	queues.Set(set)
	return r.incoming
}

// takeIncoming is the revision Run starts with (zero: the configured
// directories).
func (r *revisions) takeIncoming() Revision {
	r.mu.Lock()
	defer r.mu.Unlock()
	var rev Revision
	if r.incoming != nil {
		rev, r.incoming = *r.incoming, nil
	}
	return rev
}

// incomingCommit is the commit of the newest revision not yet adopted.
func (r *revisions) incomingCommit() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.incoming == nil {
		return ""
	}
	return r.incoming.Commit
}

// stale: a newer revision than rev was reported since.
func (r *revisions) stale(rev Revision) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.incoming != nil && *r.incoming != rev
}

// done: rev was judged; a success clears the last refusal.
func (r *revisions) done(rev Revision, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.incoming != nil && *r.incoming == rev {
		r.incoming = nil
	}
	if ok {
		r.treeError, r.treeReason = "", ""
	}
}

// refused keeps a refused tree's error and reason for /status.
func (r *revisions) refused(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.treeError, r.treeReason = err.Error(), queue.Reason(err)
}

// treeStatus is the last refused tree's error and reason.
func (r *revisions) treeStatus() (err, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.treeError, r.treeReason
}
