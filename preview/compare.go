package preview

import (
	"slices"

	"github.com/pmezard/go-difflib/difflib"
)

// How a module changed between two previews (Comparison.Change).
const (
	Added     = "added"
	Removed   = "removed"
	Changed   = "changed"
	Unchanged = "unchanged"
	Failed    = "failed"
)

// SideFailure is a module's failure on one side of a comparison.
type SideFailure struct {
	Side  string `json:"side"` // from or to
	File  string `json:"file"`
	Error string `json:"error"`
}

// Comparison is how two previews compare, module by module.
type Comparison struct {
	// Names: the modules of both sides, in order: after's enabled, then
	// before's removed, then the failed ones neither enabled, in the
	// failures' (run) order, the same from one run to the next
	Names []string
	// Change is each module's: Added, Removed, Changed, Unchanged, Failed.
	Change map[string]string
	// Failed: by module, the sides it failed on.
	Failed                  map[string][]SideFailure
	Added, Removed, Changed []string
	// Diffs: the unified diff of each added, removed and changed module's
	// manifests, labelled module@from and module@to; Secrets' values are
	// redacted in them unless Compare was asked to show them.
	Diffs map[string]string
}

// Compare compares before (labelled from) with after (labelled to). It
// compares the manifests as they are, Secrets' data included (render them
// with Options.ShowSecrets), and, unless showSecrets, writes the diffs
// with every Secret value redacted: a value that changed shows as
// RedactedChanged on the to side, so the diff names its key.
func Compare(before, after *Preview, from, to string, showSecrets bool) (*Comparison, error) {
	c := &Comparison{Change: map[string]string{}, Failed: map[string][]SideFailure{}, Diffs: map[string]string{}}
	for _, side := range []struct {
		name string
		p    *Preview
	}{{"from", before}, {"to", after}} {
		for _, f := range side.p.Failures {
			c.Failed[f.Module] = append(c.Failed[f.Module], SideFailure{Side: side.name, File: f.File, Error: f.Error})
		}
	}
	for _, m := range after.Enabled {
		c.Names = append(c.Names, m)
		switch {
		case c.Failed[m] != nil:
			c.Change[m] = Failed
		case !slices.Contains(before.Enabled, m):
			c.Added, c.Change[m] = append(c.Added, m), Added
		case before.Manifests[m] != after.Manifests[m]:
			c.Changed, c.Change[m] = append(c.Changed, m), Changed
		default:
			c.Change[m] = Unchanged
		}
	}
	for _, m := range before.Enabled {
		if slices.Contains(after.Enabled, m) {
			continue
		}
		c.Names = append(c.Names, m)
		if c.Failed[m] != nil {
			c.Change[m] = Failed
		} else {
			c.Removed, c.Change[m] = append(c.Removed, m), Removed
		}
	}
	// a module enabled on neither side whose enabled script failed
	for _, side := range []*Preview{after, before} {
		for _, f := range side.Failures {
			if _, ok := c.Change[f.Module]; !ok {
				c.Names, c.Change[f.Module] = append(c.Names, f.Module), Failed
			}
		}
	}
	for _, m := range c.Differing() {
		a, b := before.Manifests[m], after.Manifests[m]
		if !showSecrets {
			a, b = redactPair(a, b)
		}
		text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(a), B: difflib.SplitLines(b),
			FromFile: m + "@" + from, ToFile: m + "@" + to, Context: 3,
		})
		if err != nil {
			return nil, err
		}
		c.Diffs[m] = text
	}
	return c, nil
}

// Differing lists the added, then removed, then changed modules.
func (c *Comparison) Differing() []string {
	return append(append(slices.Clone(c.Added), c.Removed...), c.Changed...)
}

// FailedModules lists the modules that failed on either side, in Names'
// order.
func (c *Comparison) FailedModules() []string {
	var out []string
	for _, m := range c.Names {
		if c.Failed[m] != nil {
			out = append(out, m)
		}
	}
	return out
}
