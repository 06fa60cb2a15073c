package values

import (
	"sync"
)

// state is what changes in a Store: the ConfigMap's values, the hooks'
// temporary patches and the effective values cached from both. One lock
// guards all of it, so a read never mixes a ConfigMap with patches pruned
// for another, and a cached section is never older than either.
type state struct {
	layout *layout // the tree's values (read only)

	mu      sync.RWMutex
	config  level            // the ConfigMap
	patches map[string]Patch // temporary patches by section ("global" or module key)
	cache   map[string]any   // effective values by section, reset on every change
	// flags are the *Enabled flags by module key that the global patch
	// leaves in its document, kept with patches["global"] so that Enabled
	// need not replay it.
	flags map[string]bool
}

func newState(lay *layout) *state {
	return &state{layout: lay, config: newLevel(), patches: map[string]Patch{}, cache: map[string]any{}, flags: map[string]bool{}}
}

// section returns the cached effective values of a section (not a copy).
func (s *state) section(key string) (any, error) {
	s.mu.RLock()
	v, ok := s.cache[key]
	s.mu.RUnlock()
	if ok {
		return v, nil
	}
	sch, err := s.layout.schemasOf(key)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// SetConfig and RestorePatches prune what no longer applies, so this
	// replay drops nothing; it tolerates stale operations all the same, as
	// a read must not fail because of one.
	v = s.layout.replay(s.config, key, s.patches[key], sch).values
	s.cache[key] = v
	return v, nil
}

// configSection is a copy of the ConfigMap's section, or nil when the
// ConfigMap has none: hooks read `null` there, as the original's do, so a
// test such as `jq -e '.mod'` tells an absent section from an empty one
// (docs/operator.md, "Hook configs and binding contexts").
func (s *state) configSection(key string) any {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if v, ok := s.config.sections[key]; ok {
		return deepCopy(v)
	}
	return nil
}
