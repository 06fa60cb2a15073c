package commithealth

import (
	"sort"
	"sync"

	"github.com/addonops/addon-operator/commitstatus"
	"github.com/addonops/addon-operator/health"
)

// Modules is every tracked module's health, by name: the health tracker.
type Modules interface {
	Modules() map[string]health.ModuleHealth
}

var _ Modules = (*health.Tracker)(nil)

// Merger passes the revision's states on to a Reporter and adds its
// health: nothing for a revision that is still applying or failed (its
// lifecycle states say more); once it is applied, each module's health
// as it changes, and the revision's once every module's has settled (no
// module Progressing or Unknown), again at each change.
type Merger struct {
	r commitstatus.Reporter

	mu      sync.Mutex
	modules Modules                  // nil until Follow
	commit  string                   // the applied revision; "" while none is
	settled health.Status            // what the revision's status last said of health
	posted  map[string]health.Status // what each module's status last said
}

var _ commitstatus.Reporter = (*Merger)(nil)

// New makes a Merger that reports to r. It follows health once Follow
// has named the modules' source: the health tracker takes the Merger's
// Transition as its listener, so the tracker is made after it.
func New(r commitstatus.Reporter) *Merger {
	return &Merger{r: r}
}

// Follow names where the modules' health is read; call it before the
// tracker runs.
func (m *Merger) Follow(modules Modules) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.modules = modules
}

// Report passes a revision state on (Applying, Applied or Failed; the
// lifecycle's) and follows the revision it names. It never blocks when
// the Reporter does not.
func (m *Merger) Report(s commitstatus.Report) {
	m.r.Report(s)
	if s.Module != "" {
		return // a module's lifecycle state is not the revision's
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if (s.State == commitstatus.Failed || s.State == commitstatus.Held) && s.Commit != m.commit {
		// another commit's tree was refused, or is held back; the
		// applied one runs on
		return
	}
	if s.State != commitstatus.Applied {
		m.commit, m.settled, m.posted = "", "", nil
		return
	}
	if m.commit != s.Commit {
		m.commit, m.settled, m.posted = s.Commit, "", nil
	}
	m.checkLocked()
}

// Transition is the health tracker's listener (health.Options.OnTransition).
func (m *Merger) Transition(health.Transition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.commit == "" {
		return
	}
	m.checkLocked()
}

// checkLocked posts each module's health that changed since it was last
// posted for this revision (a module that turned Healthy before the
// revision was applied included), then the revision's once every
// module's has settled, and again when it changes.
func (m *Merger) checkLocked() {
	if m.modules == nil {
		return
	}
	mods := m.modules.Modules()
	names := make([]string, 0, len(mods))
	for name := range mods {
		names = append(names, name)
	}
	sort.Strings(names)
	if m.posted == nil {
		m.posted = map[string]health.Status{}
	}
	settled, worst, reason := true, health.Healthy, ""
	for _, name := range names {
		h := mods[name]
		if state, ok := reportState(h.Status); ok && m.posted[name] != h.Status {
			m.posted[name] = h.Status
			m.r.Report(commitstatus.Report{Commit: m.commit, Module: name, State: state, Reason: healthReason("", h)})
		}
		switch h.Status {
		case health.Progressing, health.Unknown:
			settled = false
		case health.Degraded:
			if worst != health.Degraded {
				worst, reason = health.Degraded, healthReason(name, h)
			}
		}
	}
	if !settled || worst == m.settled {
		return
	}
	m.settled = worst
	state, _ := reportState(worst)
	m.r.Report(commitstatus.Report{Commit: m.commit, State: state, Reason: reason})
}

func reportState(s health.Status) (commitstatus.State, bool) {
	switch s {
	case health.Healthy:
		return commitstatus.Healthy, true
	case health.Progressing:
		return commitstatus.Progressing, true
	case health.Degraded:
		return commitstatus.Degraded, true
	}
	return "", false
}

// healthReason names what is not Current: the module and the first
// object, by kind and name only. kstatus's message stays on /status: it
// can carry a container's termination message, and a commit status is
// read by whoever reads the repository (docs/security.md, "Who sees what").
func healthReason(module string, h health.ModuleHealth) string {
	if h.Status == health.Healthy || len(h.Objects) == 0 {
		return ""
	}
	o := h.Objects[0]
	what := o.Kind + " " + o.Name
	if o.Namespace != "" {
		what = o.Kind + " " + o.Namespace + "/" + o.Name
	}
	what += " " + o.Status
	if module != "" {
		what = "module " + module + ": " + what
	}
	return what
}
