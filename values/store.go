package values

import (
	"errors"
	"fmt"
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
// concurrent use. It is the facade of three parts, each with its own
// state: layout (what the tree's files say, fixed at NewStore), state (the
// ConfigMap's values, the hooks' patches and the effective values, under
// one lock) and Sections (which ConfigMap sections are validated). Its own
// methods put together the documents hooks and charts read.
type Store struct {
	layout   *layout
	state    *state
	sections *Sections
}

// NewStore reads a tree's values. Warnings list keys that were ignored
// (another module's key in a module's values.yaml); errors name the file.
func NewStore(src Source) (*Store, []string, error) {
	lay := &layout{
		globalSchemas: src.GlobalSchemas,
		modules:       map[string]*module{},
		common:        newLevel(),
		own:           newLevel(),
	}
	if lay.globalSchemas == nil {
		lay.globalSchemas = &Schemas{}
	}
	for _, m := range src.Modules {
		key, err := ModuleKey(m.Name)
		if err != nil {
			return nil, nil, err
		}
		if prev, dup := lay.modules[key]; dup {
			return nil, nil, fmt.Errorf("modules %q and %q both map to values key %q", prev.name, m.Name, key)
		}
		if key == GlobalKey {
			return nil, nil, fmt.Errorf("module %q: the name %q is reserved for global values", m.Name, GlobalKey)
		}
		sch := m.Schemas
		if sch == nil {
			sch = &Schemas{}
		}
		lay.modules[key] = &module{name: m.Name, key: key, schemas: sch, scripted: m.Scripted}
		lay.order = append(lay.order, key)
	}
	commonFile := src.CommonFile
	if commonFile == "" {
		commonFile = "values.yaml"
	}
	var warnings []string
	if err := lay.fill(&lay.common, commonFile, map[string]any(src.Common), nil, &warnings); err != nil {
		return nil, nil, err
	}
	for _, m := range src.Modules {
		key, _ := ModuleKey(m.Name)
		file := m.File
		if file == "" {
			file = m.Name + "/values.yaml"
		}
		if err := lay.fill(&lay.own, file, map[string]any(m.Values), &key, &warnings); err != nil {
			return nil, nil, err
		}
	}
	s := &Store{layout: lay, state: newState(lay), sections: &Sections{layout: lay, active: map[string]bool{}}}
	return s, warnings, nil
}

// GlobalConfigValues is CONFIG_VALUES_PATH for a global hook: the
// ConfigMap's global section.
func (s *Store) GlobalConfigValues() Values {
	return Values{GlobalKey: s.state.configSection(GlobalKey)}
}

// GlobalValues is VALUES_PATH for a global hook: the merged global section.
func (s *Store) GlobalValues() (Values, error) {
	g, err := s.state.section(GlobalKey)
	if err != nil {
		return nil, err
	}
	return Values{GlobalKey: deepCopy(g)}, nil
}

// ModuleConfigValues is CONFIG_VALUES_PATH for a module's hooks and enabled
// script: the ConfigMap's global and module sections.
func (s *Store) ModuleConfigValues(key string) Values {
	return Values{GlobalKey: s.state.configSection(GlobalKey), key: s.state.configSection(key)}
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
	g, err := s.state.section(GlobalKey)
	if err != nil {
		return nil, err
	}
	m, err := s.state.section(key)
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
	sch, err := s.layout.schemasOf(key)
	if err != nil {
		return err
	}
	return errors.Join(s.layout.globalSchemas.Helm.Validate(GlobalKey, v[GlobalKey]), sch.Helm.Validate(key, v[key]))
}

// Sections selects the ConfigMap sections the store validates.
func (s *Store) Sections() *Sections { return s.sections }
