package loader

// Diff is what changed between two models.
type Diff struct {
	Added   []string // module names only in the new model
	Removed []string // module names only in the old model
	Changed []string // module names whose files changed
	// Global: global hooks, global schemas or $MODULES_DIR/values.yaml changed.
	Global bool
	// Reordered: the module order changed.
	Reordered bool
}

// Empty is true when the models are the same.
func (d Diff) Empty() bool {
	return len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Changed) == 0 && !d.Global && !d.Reordered
}

// OnlyRemoved is true when the only change is removed modules: that calls
// for 'module purge' rather than 'reload all modules'.
func (d Diff) OnlyRemoved() bool {
	return len(d.Removed) > 0 && len(d.Added) == 0 && len(d.Changed) == 0 && !d.Global && !d.Reordered
}

// Compare diffs two models; a nil old model means everything was added.
func Compare(old, next *Model) Diff {
	var d Diff
	before := map[string]*Module{}
	var oldOrder []string
	if old != nil {
		for _, m := range old.Modules {
			before[m.Name] = m
			oldOrder = append(oldOrder, m.Name)
		}
	}
	var newOrder []string
	seen := map[string]bool{}
	for _, m := range next.Modules {
		seen[m.Name] = true
		prev, ok := before[m.Name]
		switch {
		case !ok:
			d.Added = append(d.Added, m.Name)
		case prev.Hash != m.Hash:
			d.Changed = append(d.Changed, m.Name)
		}
		if ok {
			newOrder = append(newOrder, m.Name)
		}
	}
	var kept []string
	for _, name := range oldOrder {
		if !seen[name] {
			d.Removed = append(d.Removed, name)
		} else {
			kept = append(kept, name)
		}
	}
	for i := range kept {
		if kept[i] != newOrder[i] {
			d.Reordered = true
			break
		}
	}
	d.Global = old == nil || old.Global.Hash != next.Global.Hash
	return d
}
