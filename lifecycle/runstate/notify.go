package runstate

import "sync"

// notifier is a version and a channel closed when the version moves: the
// pattern health.Tracker.Watch uses. A subscriber reads Changed, does its
// work for that version, then waits on the channel; a change in between
// has already closed it, so none is missed, and a burst of changes wakes
// it once.
type notifier struct {
	mu      sync.Mutex
	version uint64
	ch      chan struct{}
}

// changed is the current version and a channel closed at the next change.
func (n *notifier) changed() (uint64, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.version, n.ch
}

// bump moves the version and wakes every subscriber.
func (n *notifier) bump() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.version++
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
}
