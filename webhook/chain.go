package webhook

import (
	"strings"

	"github.com/addonops/addon-operator/loader"
)

// Step is one conversion a hook makes: its rule, with both versions in
// full (group/version).
type Step struct {
	Hook, Binding string
	Rule          loader.ConversionRule
	From, To      string
}

// fullVersion writes a bare version ("v1") with the CRD's group.
func fullVersion(group, v string) string {
	if strings.Contains(v, "/") {
		return v
	}
	return group + "/" + v
}

// CRDGroup is the API group of a CRD's name (plural.group).
func CRDGroup(crd string) string {
	_, group, _ := strings.Cut(crd, ".")
	return group
}

// ConversionPath is the shortest chain of the bound conversions of crd
// that leads from one apiVersion to another (nil: there is none). Rules
// may chain across hooks; a bare version means the CRD's group.
func ConversionPath(crd string, entries []ConversionEntry, from, to string) []Step {
	group := CRDGroup(crd)
	var steps []Step
	for _, e := range entries {
		if e.Binding.CRDName != crd {
			continue
		}
		for _, r := range e.Binding.Conversions {
			steps = append(steps, Step{Hook: e.Hook, Binding: e.Binding.Name, Rule: r, From: fullVersion(group, r.FromVersion), To: fullVersion(group, r.ToVersion)})
		}
	}
	// breadth first: the fewest hook runs; the first rule listed wins a tie
	prev := map[string]int{from: -1}
	queue := []string{from}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		if v == to {
			var path []Step
			for at := to; prev[at] >= 0; at = steps[prev[at]].From {
				path = append([]Step{steps[prev[at]]}, path...)
			}
			return path
		}
		for i, s := range steps {
			if _, seen := prev[s.To]; s.From == v && !seen {
				prev[s.To] = i
				queue = append(queue, s.To)
			}
		}
	}
	return nil
}
