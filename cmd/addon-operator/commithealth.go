package main

import (
	"sort"
	"sync"

	"github.com/addonops/addon-operator/commitstatus"
	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/lifecycle"
)

// commitHealth posts the health of the applied revision to its commit
// (docs/operator.md, "Commit status"): once the revision is applied and
// every module's health has settled (no module Progressing or Unknown),
// the revision's status turns healthy or degraded; each module's status
// follows its module's health. Nothing is posted for a revision that is
// still applying or failed: its lifecycle states say more.
type commitHealth struct {
	r       commitstatus.Reporter
	modules func() map[string]health.ModuleHealth

	mu      sync.Mutex
	commit  string                   // the applied revision; "" while none is
	settled health.Status            // what the revision's status last said of health
	posted  map[string]health.Status // what each module's status last said
}

func newCommitHealth(r commitstatus.Reporter, modules func() map[string]health.ModuleHealth) *commitHealth {
	return &commitHealth{r: r, modules: modules}
}

// revision follows the operator's revision states; it is called from
// "main" and never blocks (Report does not).
func (c *commitHealth) revision(s lifecycle.RevisionState) {
	if s.Module != "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.State == lifecycle.RevisionFailed && s.Commit != c.commit {
		// another commit's tree was refused; the applied one runs on
		return
	}
	if s.State != lifecycle.RevisionApplied {
		c.commit, c.settled, c.posted = "", "", nil
		return
	}
	if c.commit != s.Commit {
		c.commit, c.settled, c.posted = s.Commit, "", nil
	}
	c.checkLocked()
}

// transition is the health tracker's listener.
func (c *commitHealth) transition(tr health.Transition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.commit == "" {
		return
	}
	c.checkLocked()
}

// checkLocked posts each module's health that changed since it was last
// posted for this revision (a module that turned Healthy before the
// revision was applied included), then the revision's once every
// module's has settled, and again when it changes.
func (c *commitHealth) checkLocked() {
	mods := c.modules()
	names := make([]string, 0, len(mods))
	for name := range mods {
		names = append(names, name)
	}
	sort.Strings(names)
	if c.posted == nil {
		c.posted = map[string]health.Status{}
	}
	settled, worst, reason := true, health.Healthy, ""
	for _, name := range names {
		h := mods[name]
		if state, ok := reportState(h.Status); ok && c.posted[name] != h.Status {
			c.posted[name] = h.Status
			c.r.Report(commitstatus.Report{Commit: c.commit, Module: name, State: state, Reason: healthReason("", h)})
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
	if !settled || worst == c.settled {
		return
	}
	c.settled = worst
	state, _ := reportState(worst)
	c.r.Report(commitstatus.Report{Commit: c.commit, State: state, Reason: reason})
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
