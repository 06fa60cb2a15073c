package values

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// ModuleSource is what the tree says about one module's values.
type ModuleSource struct {
	Name    string // kebab-case module name
	Values  Values // the module's values.yaml (nil when absent)
	Schemas *Schemas
	// File names the module's values.yaml in messages.
	File string
	// Scripted: the module has an enabled script, so its flags alone do
	// not say whether it is enabled (see Sections.SetActive).
	Scripted bool
}

// Source is what the tree says about values: $MODULES_DIR/values.yaml, the
// global schemas and every module.
type Source struct {
	Common        Values // $MODULES_DIR/values.yaml (nil when absent)
	CommonFile    string
	GlobalSchemas *Schemas
	Modules       []ModuleSource
}

// module is what the store knows of one module.
type module struct {
	name, key string
	schemas   *Schemas
	scripted  bool
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
	// sections reads the ConfigMap's keys and selects the sections that
	// are validated (Sections)
	sections *Sections
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
	s.sections = &Sections{modules: s.modules, files: []*level{&s.common, &s.own}, active: map[string]bool{}}
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
		s.modules[key] = &module{name: m.Name, key: key, schemas: sch, scripted: m.Scripted}
		s.order = append(s.order, key)
	}
	s.sections.order = s.order
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

// schemasOf is a section's schemas; an unknown module key is an error.
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

// configSection is a copy of the ConfigMap's section, or nil when the
// ConfigMap has none: hooks read `null` there, as the original's do, so a
// test such as `jq -e '.mod'` tells an absent section from an empty one
// (docs/operator.md, "Hook configs and binding contexts").
func (s *Store) configSection(key string) any {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if v, ok := s.config.sections[key]; ok {
		return deepCopy(v)
	}
	return nil
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

// ModuleValues is VALUES_PATH for a module's hooks and enabled script, and
// the values its chart gets: merged global values with
// global.enabledModules, and the module's section.
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

// HelmValues are a module's merged global values and its section: like
// ModuleValues without enabledModules, which no schema describes (what
// x-required-for-helm checks).
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

// Sections selects the ConfigMap sections the store validates.
func (s *Store) Sections() *Sections { return s.sections }

// Modules lists module keys in tree order.
func (s *Store) Modules() []string { return slices.Clone(s.order) }
