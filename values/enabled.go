package values

import (
	"fmt"
	"strings"
)

// Enabled resolves a module's enable flag: false, then
// $MODULES_DIR/values.yaml, the module's values.yaml, the ConfigMap, and
// flags that global hooks set through values patches. At each level a
// section that is the literal false disables the module.
func (s *Store) Enabled(key string) bool {
	st := s.state
	st.mu.RLock()
	defer st.mu.RUnlock()
	enabled := s.layout.filesEnable(st.config, key)
	if b, ok := st.flags[key]; ok {
		enabled = b
	}
	return enabled
}

// DisabledByConfig: the ConfigMap itself asks for the module to be off,
// with its *Enabled flag set to false or its section the literal false. The
// purge guard takes that as the user's word for that module
// (docs/operator.md, "Purge guard"); a flag that is merely missing is not.
func (s *Store) DisabledByConfig(key string) bool {
	st := s.state
	st.mu.RLock()
	defer st.mu.RUnlock()
	b, ok := st.config.flags[key]
	return (ok && !b) || st.config.disabled[key]
}

// flagValue reads an *Enabled flag: a boolean, or "true" or "false".
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

// isFalse: a section that is the literal false disables its module.
func isFalse(v any) bool {
	switch t := v.(type) {
	case bool:
		return !t
	case string:
		return t == "false"
	}
	return false
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
