package main

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// pending lists the types of package lifecycle (and of the sub-packages it
// is being split into) that are over the line today and that the split of
// issue #31 clears. They are named by type alone, so a move into a
// sub-package keeps its entry; each one only warns, and -hard still holds.
// Delete an entry when its type is split; nothing else belongs here.
var pending = map[string]string{
	"moduleSteps": "issue #31: lifecycle's split",
}

// reasonMark starts the line of a doc comment that says why a type is
// cohesive above -max.
const reasonMark = "Cohesive:"

type limits struct {
	Max, Hard int
	Tests     bool
	// Pending: type name -> why it may stay over Max for now, for the
	// types of lifecycle and its sub-packages only.
	Pending map[string]string
}

type verdict int

const (
	reasoned verdict = iota // over Max, with a reason: passes
	waiting                 // over Max, in Pending: warns
	noReason                // over Max without a reason: fails
	tooMany                 // over Hard: fails
)

type finding struct {
	Type    *typeInfo
	Verdict verdict
	Note    string
}

func (f finding) String() string {
	label := map[verdict]string{reasoned: "ok", waiting: "warn", noReason: "FAIL", tooMany: "FAIL"}[f.Verdict]
	return fmt.Sprintf("%-4s %3d %s: %s", label, f.Type.Methods, f.Type.id(), f.Note)
}

// judge returns the types over l.Max, the most methods first.
func judge(types []*typeInfo, l limits) []finding {
	var out []finding
	for _, t := range types {
		if t.Methods <= l.Max {
			continue
		}
		f := finding{Type: t}
		reason := reasonOf(t.Doc)
		switch {
		case t.Methods > l.Hard:
			f.Verdict, f.Note = tooMany, fmt.Sprintf("over %d", l.Hard)
		case reason != "":
			f.Verdict, f.Note = reasoned, reason
		case inLifecycle(t.Dir) && l.Pending[t.Name] != "":
			f.Verdict, f.Note = waiting, "pending, "+l.Pending[t.Name]
		default:
			f.Verdict, f.Note = noReason, fmt.Sprintf("over %d without a %q line in its doc comment", l.Max, reasonMark)
		}
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Type.Methods != out[j].Type.Methods {
			return out[i].Type.Methods > out[j].Type.Methods
		}
		return out[i].Type.id() < out[j].Type.id()
	})
	return out
}

func reasonOf(doc string) string {
	for _, line := range strings.Split(doc, "\n") {
		if r, ok := strings.CutPrefix(strings.TrimSpace(line), reasonMark); ok && strings.TrimSpace(r) != "" {
			return strings.TrimSpace(r)
		}
	}
	return ""
}

func inLifecycle(dir string) bool {
	return dir == "lifecycle" || strings.HasPrefix(path.Clean(dir), "lifecycle/")
}
