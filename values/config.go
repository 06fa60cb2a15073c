package values

import (
	"errors"
	"fmt"

	"sigs.k8s.io/yaml"
)

// Change says what a new configuration changed.
type Change struct {
	Global  bool     // the global section
	Enabled bool     // an *Enabled flag or a module section's literal false
	Modules []string // keys of modules whose section changed
	// Dropped lists the stored temporary patch operations that no longer
	// apply to the new config values and were discarded, for the caller to
	// log. Their sections are among the changed ones.
	Dropped []DroppedOp
}

// Empty is true when nothing changed.
func (c Change) Empty() bool { return !c.Global && !c.Enabled && len(c.Modules) == 0 }

// SetConfig validates and adopts a ConfigMap's data. On error nothing
// changes; the error lists every bad key and every schema violation.
func (s *Store) SetConfig(data map[string]string) (Change, error) {
	l, err := s.sections.parse(data)
	if err != nil {
		return Change{}, err
	}
	return s.state.setConfig(l, func(cfg level) error { return s.layout.validate(cfg, s.sections) })
}

// setConfig adopts a parsed ConfigMap that validate accepts, under the
// lock: the cache is reset and the stored patches of the changed sections
// are pruned (pruneLocked) in the same step.
func (s *state) setConfig(l level, validate func(level) error) (Change, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := validate(l); err != nil {
		return Change{}, err
	}
	var ch Change
	ch.Global = !equal(l.sections[GlobalKey], s.config.sections[GlobalKey])
	ch.Enabled = !equal(l.flags, s.config.flags) || !equal(l.disabled, s.config.disabled)
	for _, k := range s.layout.order {
		if !equal(l.sections[k], s.config.sections[k]) {
			ch.Modules = append(ch.Modules, k)
		}
	}
	s.config = l
	clear(s.cache)
	changed := ch.Modules
	if ch.Global {
		changed = append([]string{GlobalKey}, changed...)
	}
	flags := s.flags
	ch.Dropped = s.pruneLocked(changed)
	ch.Enabled = ch.Enabled || !equal(flags, s.flags)
	return ch, nil
}

// CheckConfig validates a ConfigMap's data without adopting it.
func (s *Store) CheckConfig(data map[string]string) error {
	l, err := s.sections.parse(data)
	if err != nil {
		return err
	}
	// under the state's lock, as SetConfig validates, so a check never
	// runs beside an adoption
	s.state.mu.RLock()
	defer s.state.mu.RUnlock()
	return s.layout.validate(l, s.sections)
}

// validate checks the config values of the global section and of every
// module whose section is checked (Sections.checked) against their config
// schemas. The values schema is checked after each hook (ApplyValuesPatch):
// before hooks ran, values a hook provides are legitimately missing.
func (lay *layout) validate(cfg level, sections *Sections) error {
	var errs []error
	if err := lay.globalSchemas.Config.Validate(GlobalKey, lay.configMerged(cfg, GlobalKey, lay.globalSchemas)); err != nil {
		errs = append(errs, err)
	}
	for _, k := range lay.order {
		if sections.checked(cfg, k) {
			errs = append(errs, lay.checkModule(cfg, k))
		}
	}
	return errors.Join(errs...)
}

// checkModule validates a module's config values, naming the module.
func (lay *layout) checkModule(cfg level, key string) error {
	m := lay.modules[key]
	if err := m.schemas.Config.Validate(key, lay.configMerged(cfg, key, m.schemas)); err != nil {
		return fmt.Errorf("module %s: %w", m.name, err)
	}
	return nil
}

// CheckModuleConfig validates a module's config values (the ConfigMap the
// store holds) against its config schema: discovery asks it of a module
// it is about to enable. The error names the module.
func (s *Store) CheckModuleConfig(key string) error {
	if _, ok := s.layout.modules[key]; !ok {
		return fmt.Errorf("unknown module values key %q", key)
	}
	s.state.mu.RLock()
	defer s.state.mu.RUnlock()
	return s.layout.checkModule(s.state.config, key)
}

// ApplyConfigPatch applies a hook's config patch to ConfigMap data and
// returns the new data. moduleKey is empty for a global hook. Keys the patch
// does not change keep their text as the user wrote it. The caller persists
// the result (retrying on conflict with fresh data) and then calls SetConfig.
func ApplyConfigPatch(hook, moduleKey string, data map[string]string, p Patch) (map[string]string, error) {
	if len(p) == 0 {
		return data, nil
	}
	if err := p.checkScope(hook, moduleKey); err != nil {
		return nil, err
	}
	doc := map[string]any{}
	for k, text := range data {
		v, err := parseSection("ConfigMap key "+k, text)
		if err != nil {
			return nil, fmt.Errorf("hook %s: config patch: %w", hook, err)
		}
		doc[k] = v
	}
	scope := moduleKey
	if scope == "" {
		scope = GlobalKey
	}
	_, had := doc[scope]
	if v, _ := doc[scope].(map[string]any); v == nil {
		if _, isList := doc[scope].([]any); !isList {
			doc[scope] = map[string]any{}
		}
	}
	orig := deepCopy(doc).(map[string]any)
	out, err := p.apply(doc)
	if err != nil {
		return nil, fmt.Errorf("hook %s: config patch: %w", hook, err)
	}
	res := make(map[string]string, len(out))
	for k, v := range out {
		if text, ok := data[k]; ok && equal(orig[k], v) {
			res[k] = text
			continue
		}
		if k == scope && !had {
			if m, ok := v.(map[string]any); ok && len(m) == 0 {
				continue
			}
		}
		y, err := yaml.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("hook %s: config patch: encode %s: %w", hook, k, err)
		}
		res[k] = string(y)
	}
	return res, nil
}
