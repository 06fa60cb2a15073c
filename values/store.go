package values

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"
)

// ModuleSource is what the tree says about one module's values.
type ModuleSource struct {
	Name    string // kebab-case module name
	Values  Values // the module's values.yaml (nil when absent)
	Schemas *Schemas
	// File names the module's values.yaml in messages.
	File string
}

// Source is what the tree says about values: $MODULES_DIR/values.yaml, the
// global schemas and every module.
type Source struct {
	Common        Values // $MODULES_DIR/values.yaml (nil when absent)
	CommonFile    string
	GlobalSchemas *Schemas
	Modules       []ModuleSource
}

// level is one source of values in merge order: its sections, its *Enabled
// flags, and the modules whose section is the literal false.
type level struct {
	sections map[string]any
	flags    map[string]bool
	disabled map[string]bool
}

func newLevel() level {
	return level{sections: map[string]any{}, flags: map[string]bool{}, disabled: map[string]bool{}}
}

type module struct {
	name, key string
	schemas   *Schemas
}

// Store holds the values of one loaded tree: static values from files, the
// ConfigMap's values and the temporary patches of hooks. It is safe for
// concurrent use.
type Store struct {
	globalSchemas *Schemas
	modules       map[string]*module // by key
	order         []string           // module keys in tree order

	common level // $MODULES_DIR/values.yaml
	own    level // each module's own values.yaml (only its key and flag)

	mu      sync.RWMutex
	config  level            // the ConfigMap
	patches map[string]Patch // temporary patches by section ("global" or module key)
	cache   map[string]any   // effective values by section, reset on every change
	// flags are the *Enabled flags by module key that the global patch
	// leaves in its document, kept with patches["global"] so that Enabled
	// need not replay it.
	flags map[string]bool
}

// NewStore reads a tree's values. Warnings list keys that were ignored
// (another module's key in a module's values.yaml); errors name the file.
func NewStore(src Source) (*Store, []string, error) {
	s := &Store{
		globalSchemas: src.GlobalSchemas,
		modules:       map[string]*module{},
		common:        newLevel(),
		own:           newLevel(),
		config:        newLevel(),
		patches:       map[string]Patch{},
		cache:         map[string]any{},
		flags:         map[string]bool{},
	}
	if s.globalSchemas == nil {
		s.globalSchemas = &Schemas{}
	}
	for _, m := range src.Modules {
		key, err := ModuleKey(m.Name)
		if err != nil {
			return nil, nil, err
		}
		if prev, dup := s.modules[key]; dup {
			return nil, nil, fmt.Errorf("modules %q and %q both map to values key %q", prev.name, m.Name, key)
		}
		if key == GlobalKey {
			return nil, nil, fmt.Errorf("module %q: the name %q is reserved for global values", m.Name, GlobalKey)
		}
		sch := m.Schemas
		if sch == nil {
			sch = &Schemas{}
		}
		s.modules[key] = &module{name: m.Name, key: key, schemas: sch}
		s.order = append(s.order, key)
	}
	commonFile := src.CommonFile
	if commonFile == "" {
		commonFile = "values.yaml"
	}
	var warnings []string
	if err := s.fillLevel(&s.common, commonFile, map[string]any(src.Common), nil, &warnings); err != nil {
		return nil, nil, err
	}
	for _, m := range src.Modules {
		key, _ := ModuleKey(m.Name)
		file := m.File
		if file == "" {
			file = m.Name + "/values.yaml"
		}
		if err := s.fillLevel(&s.own, file, map[string]any(m.Values), &key, &warnings); err != nil {
			return nil, nil, err
		}
	}
	return s, warnings, nil
}

// fillLevel sorts a values document's top-level keys into a level. With
// only set, keys other than that module's section and flag are ignored.
func (s *Store) fillLevel(l *level, file string, doc map[string]any, only *string, warnings *[]string) error {
	for k, v := range doc {
		switch {
		case only != nil && k != *only && k != EnabledKey(*only):
			*warnings = append(*warnings, fmt.Sprintf("%s: key %q ignored: a module's values.yaml may hold only %q and %q", file, k, *only, EnabledKey(*only)))
		case k == GlobalKey:
			if _, ok := asMap(v); !ok {
				return fmt.Errorf("%s: global: want a map, got %s", file, kindOf(v))
			}
			l.sections[k] = v
		case s.isFlag(k):
			b, err := flagValue(v)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", file, k, err)
			}
			l.flags[strings.TrimSuffix(k, EnabledSuffix)] = b
		case isFalse(v):
			l.disabled[k] = true
		default:
			l.sections[k] = v
		}
	}
	return nil
}

// isFlag: a key that is a known module's key plus "Enabled", or any
// *Enabled key that is not itself a module's key.
func (s *Store) isFlag(k string) bool {
	if !strings.HasSuffix(k, EnabledSuffix) || len(k) == len(EnabledSuffix) {
		return false
	}
	_, isModule := s.modules[k]
	return !isModule
}

func flagValue(v any) (bool, error) {
	switch t := v.(type) {
	case bool:
		return t, nil
	case string:
		switch t {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return false, fmt.Errorf("want true or false, got %s %v", kindOf(v), v)
}

func isFalse(v any) bool {
	switch t := v.(type) {
	case bool:
		return !t
	case string:
		return t == "false"
	}
	return false
}

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

// pruneLocked re-applies the stored patches of sections whose config values
// changed and keeps only the operations that still apply, so that the
// caller learns once what was lost and reads replay a patch that applies.
func (s *Store) pruneLocked(keys []string) []DroppedOp {
	var drops []DroppedOp
	for _, key := range keys {
		if len(s.patches[key]) == 0 {
			continue
		}
		sch, _ := s.schemasOf(key) // SetConfig passes the store's own sections
		r := s.replay(key, s.patches[key], sch)
		s.adoptLocked(key, r)
		drops = append(drops, r.dropped...)
	}
	return drops
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

// validateLocked checks every section's config values against its config
// schema. The values schema is checked after each hook (ApplyValuesPatch):
// before hooks ran, values a hook provides are legitimately missing.
func (s *Store) validateLocked(cfg level) error {
	var errs []error
	check := func(key string, sch *Schemas) {
		if err := sch.Config.Validate(key, s.configMerged(cfg, key, sch)); err != nil {
			errs = append(errs, err)
		}
	}
	check(GlobalKey, s.globalSchemas)
	for _, k := range s.order {
		check(k, s.modules[k].schemas)
	}
	return errors.Join(errs...)
}

// configMerged is a section's config values: $MODULES_DIR/values.yaml and
// the module's values.yaml, then the config schema's defaults, then the
// ConfigMap, as the original layers them (so the ConfigMap's keys merge
// into a defaulted object rather than replace it).
func (s *Store) configMerged(cfg level, key string, sch *Schemas) any {
	var v any = map[string]any{}
	for _, l := range []level{s.common, s.own} {
		if sec, ok := l.sections[key]; ok {
			v = merge(v, sec)
		}
	}
	if sch.Config != nil {
		v = sch.Config.ApplyDefaults(v)
	}
	if sec, ok := cfg.sections[key]; ok {
		v = merge(v, sec)
	}
	return v
}

// replayed is a section's stored patch re-applied on its values.
type replayed struct {
	doc     map[string]any  // the patched document
	values  any             // the section's values
	flags   map[string]bool // *Enabled flags the patch set (global only)
	kept    Patch           // the operations that applied
	dropped []DroppedOp     // the ones that no longer do
}

// replay computes a section's values: config values with the values
// schema's defaults, then the temporary patch, as the original orders them
// (a hook may replace or remove a defaulted key, and a removal sticks). It
// cannot fail: operations that no longer apply are dropped (Patch.replay).
func (s *Store) replay(key string, p Patch, sch *Schemas) replayed {
	base := s.configMerged(s.config, key, sch)
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

// patchedFlags reads the *Enabled flags from the document of a global patch,
// where a global hook sets them next to "global". Reading the document the
// whole patch made, rather than the flag operations alone, keeps a flag
// whatever else the patch does.
func patchedFlags(key string, doc map[string]any) map[string]bool {
	flags := map[string]bool{}
	if key != GlobalKey {
		return flags
	}
	for k, v := range doc {
		m, ok := strings.CutSuffix(k, EnabledSuffix)
		if !ok || m == "" {
			continue
		}
		if b, err := flagValue(v); err == nil {
			flags[m] = b
		}
	}
	return flags
}

// adoptLocked makes a replay the section's stored patch and values.
func (s *Store) adoptLocked(key string, r replayed) {
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

func (s *Store) schemasOf(key string) (*Schemas, error) {
	if key == GlobalKey {
		return s.globalSchemas, nil
	}
	m, ok := s.modules[key]
	if !ok {
		return nil, fmt.Errorf("unknown module values key %q", key)
	}
	return m.schemas, nil
}

// section returns the cached effective values of a section (not a copy).
func (s *Store) section(key string) (any, error) {
	s.mu.RLock()
	v, ok := s.cache[key]
	s.mu.RUnlock()
	if ok {
		return v, nil
	}
	sch, err := s.schemasOf(key)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// SetConfig and RestorePatches prune what no longer applies, so this
	// replay drops nothing; it tolerates stale operations all the same, as
	// a read must not fail because of one.
	v = s.replay(key, s.patches[key], sch).values
	s.cache[key] = v
	return v, nil
}

func (s *Store) configSection(key string) any {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if v, ok := s.config.sections[key]; ok {
		return deepCopy(v)
	}
	return map[string]any{}
}

// GlobalConfigValues is CONFIG_VALUES_PATH for a global hook: the
// ConfigMap's global section.
func (s *Store) GlobalConfigValues() Values {
	return Values{GlobalKey: s.configSection(GlobalKey)}
}

// GlobalValues is VALUES_PATH for a global hook: the merged global section.
func (s *Store) GlobalValues() (Values, error) {
	g, err := s.section(GlobalKey)
	if err != nil {
		return nil, err
	}
	return Values{GlobalKey: deepCopy(g)}, nil
}

// ModuleConfigValues is CONFIG_VALUES_PATH for a module's hooks and enabled
// script: the ConfigMap's global and module sections.
func (s *Store) ModuleConfigValues(key string) Values {
	return Values{GlobalKey: s.configSection(GlobalKey), key: s.configSection(key)}
}

// ModuleValues is VALUES_PATH for a module's hooks and enabled script:
// merged global values with global.enabledModules, and the module's section.
func (s *Store) ModuleValues(key string, enabledModules []string) (Values, error) {
	v, err := s.HelmValues(key)
	if err != nil {
		return nil, err
	}
	g, _ := v[GlobalKey].(map[string]any)
	if enabledModules == nil {
		enabledModules = []string{}
	}
	list := make([]any, len(enabledModules))
	for i, m := range enabledModules {
		list[i] = m
	}
	g["enabledModules"] = list
	return v, nil
}

// HelmValues are the values a module's chart gets: like ModuleValues but
// without enabledModules.
func (s *Store) HelmValues(key string) (Values, error) {
	g, err := s.section(GlobalKey)
	if err != nil {
		return nil, err
	}
	m, err := s.section(key)
	if err != nil {
		return nil, err
	}
	gm, ok := deepCopy(g).(map[string]any)
	if !ok {
		gm = map[string]any{}
	}
	return Values{GlobalKey: gm, key: deepCopy(m)}, nil
}

// CheckHelmValues validates a module's Helm values against the global and
// module schemas with x-required-for-helm.
func (s *Store) CheckHelmValues(key string) error {
	v, err := s.HelmValues(key)
	if err != nil {
		return err
	}
	sch, err := s.schemasOf(key)
	if err != nil {
		return err
	}
	return errors.Join(s.globalSchemas.Helm.Validate(GlobalKey, v[GlobalKey]), sch.Helm.Validate(key, v[key]))
}

// Enabled resolves a module's enable flag: false, then
// $MODULES_DIR/values.yaml, the module's values.yaml, the ConfigMap, and
// flags that global hooks set through values patches. At each level a
// section that is the literal false disables the module.
func (s *Store) Enabled(key string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	enabled := false
	for _, l := range []level{s.common, s.own, s.config} {
		if b, ok := l.flags[key]; ok {
			enabled = b
		}
		if l.disabled[key] {
			enabled = false
		}
	}
	if b, ok := s.flags[key]; ok {
		enabled = b
	}
	return enabled
}

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
	sch, err := s.schemasOf(key)
	if err != nil {
		return PatchResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.replay(key, s.patches[key], sch)
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

// Modules lists module keys in tree order.
func (s *Store) Modules() []string { return slices.Clone(s.order) }

// Patches returns the temporary patches by section, for carrying them to
// the store of a newly loaded tree.
func (s *Store) Patches() map[string]Patch {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]Patch, len(s.patches))
	for k, p := range s.patches {
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
		drops = append(drops, s.restore(key, patches[key])...)
	}
	return drops
}

func (s *Store) restore(key string, p Patch) []DroppedOp {
	sch, err := s.schemasOf(key)
	if err != nil {
		return dropAll(key, p, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.replay(key, p, sch)
	if err := sch.Values.Validate(key, r.values); err != nil {
		return append(r.dropped, dropAll(key, r.kept, err)...)
	}
	s.adoptLocked(key, r)
	return r.dropped
}

func dropAll(section string, p Patch, reason error) []DroppedOp {
	out := make([]DroppedOp, len(p))
	for i, op := range p {
		out[i] = dropped(section, op, reason)
	}
	return out
}
