package commitstatus

import (
	"strings"
	"unicode/utf8"
)

// State is what a report says of a revision or of one of its modules.
type State string

// Report states. Applying, Applied and Failed come from the lifecycle;
// Progressing, Healthy and Degraded are for module health; Held is a
// commit fetched and checked but held back, the running revision staying
// (a suspended source; the forge shows it pending).
const (
	Applying    State = "applying"
	Applied     State = "applied"
	Failed      State = "failed"
	Progressing State = "progressing"
	Healthy     State = "healthy"
	Degraded    State = "degraded"
	Held        State = "held"
)

// Valid reports whether s is one of the states above.
func (s State) Valid() bool {
	switch s {
	case Applying, Applied, Failed, Progressing, Healthy, Degraded, Held:
		return true
	}
	return false
}

// outcome is the state as the GitHub-compatible API names it: pending,
// success or failure.
func (s State) outcome() string {
	switch s {
	case Applied, Healthy:
		return "success"
	case Failed, Degraded:
		return "failure"
	}
	return "pending"
}

// Report is one state of a commit: of the whole revision (Module "") or
// of one module. Reason is one line for a failure; it reaches whoever
// reads the repository, so it carries names only, never a hook's output
// or values (docs/security.md, "Who sees what").
type Report struct {
	Commit string
	Module string
	State  State
	Reason string
}

// Reporter takes reports; Report never blocks. Health plugs in here.
type Reporter interface {
	Report(Report)
}

var _ Reporter = (*Notifier)(nil)

// Status is one commit status as a Provider posts it.
type Status struct {
	Commit string
	// Context names the status: addon-operator/<cluster>[/<module>].
	Context string
	Cluster string
	Module  string
	// Ring is the cluster's rollout ring, when it has one.
	Ring  *int
	State State
	// Description is one line of at most maxDescription characters.
	Description string
	TargetURL   string
}

// maxDescription is GitHub's limit on a status description, in characters.
const maxDescription = 140

// statusContext is the context of a report: one per cluster for the
// revision, one per cluster and module for a module.
func statusContext(cluster, module string) string {
	c := "addon-operator"
	if cluster != "" {
		c += "/" + cluster
	}
	if module != "" {
		c += "/" + module
	}
	return c
}

// describe is a status's description: what happened, where, and for a
// failure why, on one line of at most maxDescription characters.
func describe(r Report, cluster string) string {
	what := string(r.State)
	if r.Module != "" {
		what = "module " + r.Module + " " + what
	}
	if cluster != "" {
		what += " on " + cluster
	}
	if reason := oneLine(r.Reason); reason != "" {
		what += ": " + reason
	}
	return truncate(what, maxDescription)
}

func oneLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(line)
}

// truncate shortens s to at most n characters, ending with "…" when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
