package driftcheck

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/addonops/addon-operator/drift"
)

// Status is a module's drift on /status: the objects of its release that
// differ from the chart, with the paths of the fields that do (never their
// values).
type Status struct {
	// Mode is what is done about it: warn or correct ("maintenance" in
	// maintenance, where it is not corrected).
	Mode    string         `json:"mode"`
	Objects []drift.Object `json:"objects"`
}

// reports are the modules' last drift checks, under their own lock.
type reports struct {
	mu     sync.Mutex
	by     map[string]Status
	warned map[string]string // the drift last recorded as an Event, by module
}

// get is a module's report (nil: none), its objects a copy.
func (r *reports) get(name string) *Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.by[name]
	if !ok {
		return nil
	}
	st.Objects = slices.Clone(st.Objects)
	return &st
}

// set records a module's report; it returns the Event message when the
// drift is new (not what was last recorded), "" otherwise.
func (r *reports) set(name string, st *Status) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by, r.warned = map[string]Status{}, map[string]string{}
	}
	if st == nil || len(st.Objects) == 0 {
		delete(r.by, name)
		delete(r.warned, name)
		return ""
	}
	r.by[name] = *st
	msg := message(name, st.Objects)
	if r.warned[name] == msg {
		return ""
	}
	r.warned[name] = msg
	return msg
}

// message names the drifted objects and fields, bounded for an Event.
func message(module string, objs []drift.Object) string {
	parts := make([]string, 0, len(objs))
	for _, o := range objs {
		parts = append(parts, o.Ref()+" ("+strings.Join(o.Fields, ", ")+")")
	}
	msg := fmt.Sprintf("module %s: %d object(s) differ from the chart: %s", module, len(objs), strings.Join(parts, "; "))
	if len(msg) > 1000 {
		msg = msg[:1000] + "…"
	}
	return msg
}

// moduleLocks keep two drift checks (or a check and a correction) of one
// module from overlapping: the interval's, an edit's and "main"'s.
type moduleLocks struct {
	mu sync.Mutex
	by map[string]*sync.Mutex
}

// lock locks a module's drift checks and returns the unlock.
func (l *moduleLocks) lock(name string) func() {
	l.mu.Lock()
	if l.by == nil {
		l.by = map[string]*sync.Mutex{}
	}
	m := l.by[name]
	if m == nil {
		m = &sync.Mutex{}
		l.by[name] = m
	}
	l.mu.Unlock()
	m.Lock()
	return m.Unlock
}
