package driftcheck

import (
	"slices"
	"sync"
)

// Inbox holds the edits of release objects that the health tracker tells
// (its Options.OnEdited: Inbox.Edited) until a Checker's Run takes them.
// It exists before both the tracker and the operator, so neither needs
// the other to be built first (docs/architecture.md, "The running
// state"); edits told before Run wait in it.
type Inbox struct {
	mu      sync.Mutex
	modules []string
	wake    chan struct{}
}

// NewInbox is an empty inbox.
func NewInbox() *Inbox { return &Inbox{wake: make(chan struct{}, 1)} }

// Edited notes an edit of a module's objects; it never blocks.
func (in *Inbox) Edited(module string) {
	in.mu.Lock()
	if !slices.Contains(in.modules, module) {
		in.modules = append(in.modules, module)
	}
	in.mu.Unlock()
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

// take is what waits, emptied.
func (in *Inbox) take() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := in.modules
	in.modules = nil
	return out
}

// woken is the channel a Run waits on (nil for a nil inbox: never).
func (in *Inbox) woken() <-chan struct{} {
	if in == nil {
		return nil
	}
	return in.wake
}
