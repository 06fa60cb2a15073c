package clusterconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// OperatorKey is the top-level key of a config file that holds the
// operator's own settings for the cluster (a fleet's ring and change
// windows), not a ConfigMap key: a module's values key is camelCase, so
// no module's section can be named with a dash.
const OperatorKey = "addon-operator"

// checkOperator checks the operator's section of one file: a mapping
// whose keys are sections Settings.OperatorSections accepts (none: the
// whole key is refused, so a setting no code reads is never silently
// ignored).
func (m *merger) checkOperator(v any) error {
	if v == nil {
		return nil
	}
	sections, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("want a mapping of the operator's settings, got %s", kindOf(v))
	}
	if len(m.s.OperatorSections) == 0 {
		return fmt.Errorf("this operator reads none of its own settings from the config in git")
	}
	names := make([]string, 0, len(sections))
	for name := range sections {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.Contains(m.s.OperatorSections, name) {
			return fmt.Errorf("%s.%s: not a setting of the operator; want one of %s", OperatorKey, name, strings.Join(m.s.OperatorSections, ", "))
		}
	}
	return nil
}

// applyOperator merges one file's operator section over what earlier
// files set, as any section merges (null removes it).
func (m *merger) applyOperator(file string, v any, set bool) {
	if !set {
		return
	}
	m.operatorFiles = append(m.operatorFiles, file)
	if v == nil {
		m.operator = nil
		return
	}
	if m.operator == nil {
		m.operator = map[string]any{}
	}
	m.operator = merge(m.operator, v).(map[string]any)
}

// Operator decodes the operator's section name into into (a struct with
// JSON tags; unknown fields refused) and says whether the config sets it.
// An error names the files that set the operator's settings and the
// section.
func (c *Config) Operator(name string, into any) (bool, error) {
	v, ok := c.operator[name]
	if !ok || v == nil {
		return false, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return true, c.operatorErr(name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return true, c.operatorErr(name, err)
	}
	return true, nil
}

func (c *Config) operatorErr(name string, err error) error {
	return &Error{File: strings.Join(c.OperatorFiles, ", "), Key: OperatorKey + "." + name, Msg: err.Error()}
}
