package kube

import (
	"slices"
	"time"

	"github.com/itchyny/gojq"
)

// member is one binding's part of a shared watch (or one namespace label
// selector's part of a watch of namespaces).
type member struct {
	name string
	jq   *gojq.Code
	// onFilter is told how long each filter run took (nil: not measured)
	onFilter func(time.Duration)
	keep     bool     // keeps whole objects: its snapshot has them
	names    []string // only objects of these names (empty: all)
	// on is told each change of what the member sees, in order; objects
	// it starts seeing come as Added, objects it stops seeing as Deleted.
	on      func(change)
	onError func(error)
	// ready gets nil at the member's first list, or the API server's
	// refusal of it.
	ready chan error
	slot  int
	count int // objects it sees; guarded by the watch's lock
}

func (mb *member) sees(name string) bool {
	return len(mb.names) == 0 || slices.Contains(mb.names, name)
}

// note is a change for one member, told once the store is unlocked.
type note struct {
	mb *member
	c  change
}

func tell(notes []note) {
	for _, n := range notes {
		n.mb.on(n.c)
	}
}

// change is what a member is told.
type change struct {
	typ string
	rec *record
	// object is the object as the API server sent it; nil when it comes
	// from the store (a member joining, a re-list that lost it).
	object map[string]any
	result any
}
