package values

import (
	"fmt"
	"maps"
	"slices"
)

// PatchResult says what a hook's values patch changed.
type PatchResult struct {
	Changed bool
}

// ApplyValuesPatch checks a hook's temporary patch (scope and schema) and
// stores it. moduleKey is empty for a global hook. On error nothing changes.
func (s *Store) ApplyValuesPatch(hook, moduleKey string, p Patch) (PatchResult, error) {
	if len(p) == 0 {
		return PatchResult{}, nil
	}
	if err := p.checkScope(hook, moduleKey); err != nil {
		return PatchResult{}, err
	}
	key := moduleKey
	if key == "" {
		key = GlobalKey
	}
	sch, err := s.layout.schemasOf(key)
	if err != nil {
		return PatchResult{}, err
	}
	return s.state.applyPatch(hook, key, p, sch)
}

// applyPatch is ApplyValuesPatch under the lock, for a section whose
// schemas are sch.
func (s *state) applyPatch(hook, key string, p Patch, sch *Schemas) (PatchResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.layout.replay(s.config, key, s.patches[key], sch)
	// applied strictly, unlike a replay, so that a bad operation fails now,
	// naming the hook
	doc, err := p.apply(cur.doc)
	if err != nil {
		return PatchResult{}, fmt.Errorf("hook %s: values patch: %w", hook, err)
	}
	after := patched(key, doc)
	if err := sch.Values.Validate(key, after.values); err != nil {
		return PatchResult{}, fmt.Errorf("hook %s: %w", hook, err)
	}
	// cur.kept is the stored patch, which applies (SetConfig and
	// RestorePatches prune it); compact keeps what it and p make, which is
	// after.values
	after.kept = compact(append(slices.Clone(cur.kept), p.by(hook)...))
	s.adoptLocked(key, after)
	return PatchResult{Changed: !equal(cur.values, after.values) || !equal(cur.flags, after.flags)}, nil
}

// pruneLocked re-applies the stored patches of sections whose config values
// changed and keeps only the operations that still apply, so that the
// caller learns once what was lost and reads replay a patch that applies.
func (s *state) pruneLocked(keys []string) []DroppedOp {
	var drops []DroppedOp
	for _, key := range keys {
		if len(s.patches[key]) == 0 {
			continue
		}
		sch, _ := s.layout.schemasOf(key) // SetConfig passes the store's own sections
		r := s.layout.replay(s.config, key, s.patches[key], sch)
		s.adoptLocked(key, r)
		drops = append(drops, r.dropped...)
	}
	return drops
}

// replayed is a section's stored patch re-applied on its values.
type replayed struct {
	doc     map[string]any  // the patched document
	values  any             // the section's values
	flags   map[string]bool // *Enabled flags the patch set (global only)
	kept    Patch           // the operations that applied
	dropped []DroppedOp     // the ones that no longer do
}

// replay computes a section's values over the ConfigMap cfg: config
// values with the values schema's defaults, then the temporary patch, as
// the original orders them (a hook may replace or remove a defaulted key,
// and a removal sticks). It cannot fail: operations that no longer apply
// are dropped (Patch.replay).
func (lay *layout) replay(cfg level, key string, p Patch, sch *Schemas) replayed {
	base := lay.configMerged(cfg, key, sch)
	if sch.Values != nil {
		base = sch.Values.ApplyDefaults(base)
	}
	doc, kept, drops := p.replay(key, map[string]any{key: base})
	r := patched(key, doc)
	r.kept, r.dropped = kept, drops
	return r
}

// patched derives a section's values and flags from its patched document.
func patched(key string, doc map[string]any) replayed {
	return replayed{doc: doc, values: doc[key], flags: patchedFlags(key, doc)}
}

// adoptLocked makes a replay the section's stored patch and values.
func (s *state) adoptLocked(key string, r replayed) {
	if len(r.kept) == 0 {
		delete(s.patches, key)
	} else {
		s.patches[key] = r.kept
	}
	s.cache[key] = r.values
	if key == GlobalKey {
		s.flags = r.flags
	}
}

// Patches returns the temporary patches by section, for carrying them to
// the store of a newly loaded tree.
func (s *Store) Patches() map[string]Patch {
	st := s.state
	st.mu.RLock()
	defer st.mu.RUnlock()
	out := make(map[string]Patch, len(st.patches))
	for k, p := range st.patches {
		out[k] = slices.Clone(p)
	}
	return out
}

// RestorePatches adopts temporary patches from a previous store. As on a
// ConfigMap edit, operations that no longer apply to this tree's values are
// dropped; so is a whole section whose module is gone or whose patched
// values fail its values schema. It returns every dropped operation.
func (s *Store) RestorePatches(patches map[string]Patch) []DroppedOp {
	var drops []DroppedOp
	for _, key := range slices.Sorted(maps.Keys(patches)) {
		sch, err := s.layout.schemasOf(key)
		if err != nil {
			drops = append(drops, dropAll(key, patches[key], err)...)
			continue
		}
		drops = append(drops, s.state.restore(key, patches[key], sch)...)
	}
	return drops
}

// restore adopts one section's patch from a previous store
// (RestorePatches), for a section whose schemas are sch.
func (s *state) restore(key string, p Patch, sch *Schemas) []DroppedOp {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.layout.replay(s.config, key, p, sch)
	if err := sch.Values.Validate(key, r.values); err != nil {
		return append(r.dropped, dropAll(key, r.kept, err)...)
	}
	s.adoptLocked(key, r)
	return r.dropped
}

// dropAll reports every operation of p as dropped for reason.
func dropAll(section string, p Patch, reason error) []DroppedOp {
	out := make([]DroppedOp, len(p))
	for i, op := range p {
		out[i] = dropped(section, op, reason)
	}
	return out
}
