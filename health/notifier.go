package health

import (
	"log/slog"
	"slices"
)

// notifier is what the Tracker tells its listeners (Options.OnTransition,
// Options.OnEdited): the transitions and edits waiting for Run's loop,
// which tells them on its own goroutine, so a slow listener never holds a
// watch. pending and edited are under Tracker.mu; wake wakes Run.
type notifier struct {
	onTransition func(Transition)
	onEdited     func(module string)
	logger       *slog.Logger
	wake         chan struct{}

	pending []Transition
	edited  []string // modules whose objects changed, for onEdited
}

// transition queues a status change for the listener.
func (n *notifier) transition(tr Transition) {
	n.pending = append(n.pending, tr)
	n.signal()
}

// edit queues an edit of a module's objects (once until Run tells it).
func (n *notifier) edit(module string) {
	if n.onEdited == nil || slices.Contains(n.edited, module) {
		return
	}
	n.edited = append(n.edited, module)
	n.signal()
}

// drain takes what waits, for Run to tell once mu is released.
func (n *notifier) drain() ([]Transition, []string) {
	pending, edited := n.pending, n.edited
	n.pending, n.edited = nil, nil
	return pending, edited
}

func (n *notifier) signal() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// tell tells the listener of a transition, from Run's goroutine.
func (n *notifier) tell(tr Transition) {
	n.logger.Info("module health changed", "module", tr.Module, "from", tr.From, "to", tr.Health.Status, "reason", tr.Health.Message)
	if n.onTransition == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			n.logger.Error("health listener panicked", "module", tr.Module, "panic", r)
		}
	}()
	n.onTransition(tr)
}

// tellEdited tells the listener of edits, from Run's goroutine.
func (n *notifier) tellEdited(modules []string) {
	for _, name := range modules {
		func() {
			defer func() {
				if r := recover(); r != nil {
					n.logger.Error("edit listener panicked", "module", name, "panic", r)
				}
			}()
			n.onEdited(name)
		}()
	}
}
