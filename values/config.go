package values

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// parseConfigMap parses a ConfigMap's data: `global`, module sections and
// *Enabled flags, each a YAML string. Errors name the key.
func (s *Store) parseConfigMap(data map[string]string) (level, error) {
	l := newLevel()
	var errs []error
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := parseSection("ConfigMap key "+k, data[k])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		switch {
		case k == GlobalKey:
			if _, ok := asMap(v); !ok {
				errs = append(errs, fmt.Errorf("ConfigMap key global: want a map, got %s", kindOf(v)))
				continue
			}
			if v != nil {
				l.sections[k] = v
			}
		case s.isFlag(k):
			b, err := flagValue(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("ConfigMap key %s: %w", k, err))
				continue
			}
			l.flags[strings.TrimSuffix(k, EnabledSuffix)] = b
		case isFalse(v):
			l.disabled[k] = true
		case v != nil:
			l.sections[k] = v
		}
	}
	return l, errors.Join(errs...)
}

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
	l, err := s.parseConfigMap(data)
	if err != nil {
		return Change{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.validateLocked(l); err != nil {
		return Change{}, err
	}
	var ch Change
	ch.Global = !equal(l.sections[GlobalKey], s.config.sections[GlobalKey])
	ch.Enabled = !equal(l.flags, s.config.flags) || !equal(l.disabled, s.config.disabled)
	for _, k := range s.order {
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
	l, err := s.parseConfigMap(data)
	if err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.validateLocked(l)
}

// validateLocked checks the config values of the global section and of
// every module whose section is checked (checkedLocked) against their
// config schemas. The values schema is checked after each hook
// (ApplyValuesPatch): before hooks ran, values a hook provides are
// legitimately missing.
func (s *Store) validateLocked(cfg level) error {
	var errs []error
	if err := s.globalSchemas.Config.Validate(GlobalKey, s.configMerged(cfg, GlobalKey, s.globalSchemas)); err != nil {
		errs = append(errs, err)
	}
	for _, k := range s.order {
		if s.checkedLocked(cfg, k) {
			errs = append(errs, s.checkModuleLocked(cfg, k))
		}
	}
	return errors.Join(errs...)
}

// checkedLocked says whether a ConfigMap's module section is validated when
// the ConfigMap is set: the section of a module that is enabled, as far as
// is known before discovery: one the last discovery enabled (SetActive),
// one the values files and the ConfigMap enable that has no enabled
// script, and one the ConfigMap itself enables with its *Enabled flag, as
// the original addon-operator does. A module an enabled script or a global
// hook's flag enables has its section checked by discovery
// (CheckModuleConfig), so a disabled module's section never refuses a
// ConfigMap or a tree (docs/operator.md, "Values"). The hooks' flags are
// left out so that admit, which judges a store without them, and the
// running store agree.
func (s *Store) checkedLocked(cfg level, key string) bool {
	return s.active[key] || (cfg.flags[key] && !cfg.disabled[key]) ||
		(!s.modules[key].scripted && s.filesEnableLocked(cfg, key))
}

// checkModuleLocked validates a module's config values, naming the module.
func (s *Store) checkModuleLocked(cfg level, key string) error {
	m := s.modules[key]
	if err := m.schemas.Config.Validate(key, s.configMerged(cfg, key, m.schemas)); err != nil {
		return fmt.Errorf("module %s: %w", m.name, err)
	}
	return nil
}

// SetActive sets the modules whose sections every ConfigMap is validated
// against from now on: the modules the last discovery enabled, by key.
// Keys of modules the tree does not have are ignored.
func (s *Store) SetActive(keys []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active = map[string]bool{}
	for _, k := range keys {
		if _, ok := s.modules[k]; ok {
			s.active[k] = true
		}
	}
}

// Active lists the keys SetActive set, in tree order.
func (s *Store) Active() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for _, k := range s.order {
		if s.active[k] {
			out = append(out, k)
		}
	}
	return out
}

// CheckModuleConfig validates a module's config values (the ConfigMap the
// store holds) against its config schema: discovery asks it of a module
// it is about to enable. The error names the module.
func (s *Store) CheckModuleConfig(key string) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, ok := s.modules[key]; !ok {
		return fmt.Errorf("unknown module values key %q", key)
	}
	return s.checkModuleLocked(s.config, key)
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
