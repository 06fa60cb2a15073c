package preview

import (
	"slices"
	"strings"
	"testing"
)

// Compare sorts every module of two previews into added, removed,
// changed, unchanged and failed, with a unified diff of each difference
// labelled with its side.
func TestCompare(t *testing.T) {
	t.Parallel()
	fail := func(m string) Failure { return Failure{Module: m, File: "modules/" + m, Error: "boom"} }
	tests := []struct {
		name          string
		before, after *Preview
		change        map[string]string
		names         []string
		differing     []string
		failed        map[string][]string // module → sides
		diffHas       map[string]string   // module → a line its diff holds
	}{
		{name: "no differences",
			before: &Preview{Enabled: []string{"a"}, Manifests: map[string]string{"a": "x\n"}},
			after:  &Preview{Enabled: []string{"a"}, Manifests: map[string]string{"a": "x\n"}},
			change: map[string]string{"a": Unchanged}, names: []string{"a"}},
		{name: "added, removed, changed",
			before: &Preview{Enabled: []string{"a", "gone"}, Manifests: map[string]string{"a": "v: 1\n", "gone": "g\n"}},
			after:  &Preview{Enabled: []string{"new", "a"}, Manifests: map[string]string{"a": "v: 2\n", "new": "n\n"}},
			change: map[string]string{"a": Changed, "new": Added, "gone": Removed}, names: []string{"new", "a", "gone"},
			differing: []string{"new", "gone", "a"},
			diffHas:   map[string]string{"a": "+v: 2", "new": "+++ new@to", "gone": "--- gone@from"}},
		{name: "a failure on either side is no difference",
			before: &Preview{Enabled: []string{"a", "b"}, Manifests: map[string]string{"a": "1"}, Failures: []Failure{fail("b")}},
			after:  &Preview{Enabled: []string{"a", "b"}, Manifests: map[string]string{"b": "2"}, Failures: []Failure{fail("a")}},
			change: map[string]string{"a": Failed, "b": Failed}, names: []string{"a", "b"},
			failed: map[string][]string{"a": {"to"}, "b": {"from"}}},
		{name: "a module removed that failed before",
			before: &Preview{Enabled: []string{"a"}, Failures: []Failure{fail("a")}},
			after:  &Preview{},
			change: map[string]string{"a": Failed}, names: []string{"a"}, failed: map[string][]string{"a": {"from"}}},
		{name: "an enabled script that failed on both sides",
			before: &Preview{Failures: []Failure{fail("s")}},
			after:  &Preview{Failures: []Failure{fail("s")}},
			change: map[string]string{"s": Failed}, names: []string{"s"}, failed: map[string][]string{"s": {"from", "to"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Compare(tt.before, tt.after, "from", "to", false)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.Names, tt.names) {
				t.Errorf("names %v, want %v", c.Names, tt.names)
			}
			if len(c.Change) != len(tt.change) {
				t.Errorf("change %v, want %v", c.Change, tt.change)
			}
			for m, want := range tt.change {
				if c.Change[m] != want {
					t.Errorf("%s: %q, want %q", m, c.Change[m], want)
				}
			}
			if !slices.Equal(c.Differing(), tt.differing) || len(c.Diffs) != len(tt.differing) {
				t.Errorf("differing %v (diffs of %d), want %v", c.Differing(), len(c.Diffs), tt.differing)
			}
			for m, line := range tt.diffHas {
				if !strings.Contains(c.Diffs[m], line) {
					t.Errorf("%s: diff\n%s\nwithout %q", m, c.Diffs[m], line)
				}
			}
			var failedNames []string
			for _, m := range c.Names {
				var sides []string
				for _, f := range c.Failed[m] {
					sides = append(sides, f.Side)
				}
				if !slices.Equal(sides, tt.failed[m]) {
					t.Errorf("%s failed on %v, want %v", m, sides, tt.failed[m])
				}
				if len(sides) > 0 {
					failedNames = append(failedNames, m)
				}
			}
			if !slices.Equal(c.FailedModules(), failedNames) {
				t.Errorf("FailedModules %v, want %v", c.FailedModules(), failedNames)
			}
		})
	}
}

// Compare lists the modules whose enabled script failed, enabled on
// neither side, in run order (to's failures, then from's), the same on
// every run: diff's -o json and error line are stable.
func TestCompareOrderOfFailedModules(t *testing.T) {
	t.Parallel()
	fail := func(names ...string) []Failure {
		var out []Failure
		for _, n := range names {
			out = append(out, Failure{Module: n, File: "modules/" + n + "/enabled", Error: "exit status 1"})
		}
		return out
	}
	before := &Preview{Enabled: []string{"alpha", "gone"}, Manifests: map[string]string{"alpha": "a", "gone": "g"},
		Failures: fail("zeta", "delta", "omega", "kappa", "beta")}
	after := &Preview{Enabled: []string{"alpha", "new"}, Manifests: map[string]string{"alpha": "a2", "new": "n"},
		Failures: fail("omega", "zeta", "mu", "delta", "epsilon", "kappa")}
	want := []string{"alpha", "new", "gone", "omega", "zeta", "mu", "delta", "epsilon", "kappa", "beta"}
	for range 20 { // a map's order would differ between runs
		c, err := Compare(before, after, "a", "b", false)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.Names, want) {
			t.Fatalf("names %v, want %v", c.Names, want)
		}
		for _, m := range want[3:] {
			if c.Change[m] != Failed {
				t.Errorf("%s: %q, want failed", m, c.Change[m])
			}
		}
	}
}

// Modules lists a preview's modules in run order: those whose enabled
// script failed first, then the enabled ones, rendered or failed.
func TestPreviewModules(t *testing.T) {
	t.Parallel()
	p := &Preview{Enabled: []string{"a", "b", "nochart"}, Manifests: map[string]string{"a": "m"},
		Failures: []Failure{{Module: "s", File: "modules/s/enabled", Error: "exited 1"}, {Module: "b", File: "modules/b/values.yaml", Error: "bad"}}}
	got := p.Modules()
	want := []Module{{Name: "s", File: "modules/s/enabled", Error: "exited 1"}, {Name: "a", Manifest: "m"}, {Name: "b", File: "modules/b/values.yaml", Error: "bad"}}
	if !slices.Equal(got, want) {
		t.Fatalf("modules %+v, want %+v", got, want)
	}
}
