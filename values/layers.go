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
		case s.sections.isFlag(k):
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
