package values

import (
	"fmt"
	"strings"
)

// level is one source of values in merge order: its sections, its *Enabled
// flags, and the modules whose section is the literal false.
type level struct {
	sections map[string]any
	flags    map[string]bool
	disabled map[string]bool
}

// newLevel is an empty level.
func newLevel() level {
	return level{sections: map[string]any{}, flags: map[string]bool{}, disabled: map[string]bool{}}
}

// layout is what a tree's files say about values: the schemas, the modules
// in tree order, $MODULES_DIR/values.yaml and each module's values.yaml.
// NewStore fills it; it is read only after, so its readers take no lock.
type layout struct {
	globalSchemas *Schemas
	modules       map[string]*module // by key
	order         []string           // module keys in tree order

	common level // $MODULES_DIR/values.yaml
	own    level // each module's own values.yaml (only its key and flag)
}

// fill sorts a values document's top-level keys into a level. With only
// set, keys other than that module's section and flag are ignored.
func (lay *layout) fill(l *level, file string, doc map[string]any, only *string, warnings *[]string) error {
	for k, v := range doc {
		switch {
		case only != nil && k != *only && k != EnabledKey(*only):
			*warnings = append(*warnings, fmt.Sprintf("%s: key %q ignored: a module's values.yaml may hold only %q and %q", file, k, *only, EnabledKey(*only)))
		case k == GlobalKey:
			if _, ok := asMap(v); !ok {
				return fmt.Errorf("%s: global: want a map, got %s", file, kindOf(v))
			}
			l.sections[k] = v
		case lay.isFlag(k):
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
func (lay *layout) isFlag(k string) bool {
	if !strings.HasSuffix(k, EnabledSuffix) || len(k) == len(EnabledSuffix) {
		return false
	}
	_, isModule := lay.modules[k]
	return !isModule
}

// schemasOf is a section's schemas; an unknown module key is an error.
func (lay *layout) schemasOf(key string) (*Schemas, error) {
	if key == GlobalKey {
		return lay.globalSchemas, nil
	}
	m, ok := lay.modules[key]
	if !ok {
		return nil, fmt.Errorf("unknown module values key %q", key)
	}
	return m.schemas, nil
}

// configMerged is a section's config values: $MODULES_DIR/values.yaml and
// the module's values.yaml, then the config schema's defaults, then the
// ConfigMap, as the original layers them (so the ConfigMap's keys merge
// into a defaulted object rather than replace it).
func (lay *layout) configMerged(cfg level, key string, sch *Schemas) any {
	var v any = map[string]any{}
	for _, l := range []level{lay.common, lay.own} {
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

// filesEnable is the flag the values files and the ConfigMap cfg give a
// module, without the global hooks' patches.
func (lay *layout) filesEnable(cfg level, key string) bool {
	enabled := false
	for _, l := range []*level{&lay.common, &lay.own, &cfg} {
		if b, ok := l.flags[key]; ok {
			enabled = b
		}
		if l.disabled[key] {
			enabled = false
		}
	}
	return enabled
}
