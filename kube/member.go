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
	// summarize is a Go filter, run instead of jq on the decoded object
	summarize func(map[string]any) any
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

// filters: the member's result comes from a filter, so an update that
// leaves it unchanged is not reported.
func (mb *member) filters() bool { return mb.jq != nil || mb.summarize != nil }

// result is the member's filter result for an object: obj is the object
// when the caller has it decoded (nil: decode decodes it), in its jq
// input.
func (mb *member) result(obj map[string]any, decode func() map[string]any, in jqInput) any {
	if mb.summarize == nil {
		return mb.filter(in)
	}
	if obj == nil {
		obj = decode()
	}
	if obj == nil {
		return nil
	}
	defer recoverPanic("summarize of " + mb.name)
	return mb.summarize(obj)
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
