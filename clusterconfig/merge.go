package clusterconfig

import (
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/addonops/addon-operator/secretfile"
)

// merger layers files, later over earlier.
type merger struct {
	s         Settings
	modules   map[string]bool // nil: not known
	merged    map[string]any
	origin    map[string][]string
	encrypted map[string][]secretfile.Path
	layered   map[string][]layerValue
	// operator is OperatorKey's section, merged; operatorFiles the files
	// that set it
	operator      map[string]any
	operatorFiles []string
}

// layerValue is what one file set under a key, to tell which file set a
// path below it (Config.fileOf).
type layerValue struct {
	file  string
	value any // nil: the file removed the key
}

func newMerger(s Settings) *merger {
	m := &merger{s: s, merged: map[string]any{}, origin: map[string][]string{}, encrypted: map[string][]secretfile.Path{}, layered: map[string][]layerValue{}}
	if s.Modules != nil {
		m.modules = make(map[string]bool, len(s.Modules))
		for _, k := range s.Modules {
			m.modules[k] = true
		}
	}
	return m
}

// apply merges one file's entries over what earlier files set.
func (m *merger) apply(file string, d *fileDoc) {
	m.applyOperator(file, d.operator, d.operatorSet)
	for _, e := range d.entries {
		m.origin[e.key] = append(m.origin[e.key], file)
		m.layered[e.key] = append(m.layered[e.key], layerValue{file: file, value: e.value})
		if e.value == nil {
			delete(m.merged, e.key)
			continue
		}
		m.merged[e.key] = merge(m.merged[e.key], e.value)
	}
	for _, p := range d.encrypted {
		key, _ := p[0].(string)
		rest := append(secretfile.Path(nil), p[1:]...)
		if !hasPath(m.encrypted[key], rest) {
			m.encrypted[key] = append(m.encrypted[key], rest)
		}
	}
}

// merge lays over onto base as Helm merges values files: maps key by
// key, anything else replaces, null removes the key.
func merge(base, over any) any {
	bm, ok1 := base.(map[string]any)
	om, ok2 := over.(map[string]any)
	if !ok1 || !ok2 {
		return dropNulls(over)
	}
	out := make(map[string]any, len(bm)+len(om))
	for k, v := range bm {
		out[k] = v
	}
	for k, v := range om {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = merge(out[k], v)
	}
	return out
}

// dropNulls removes null map values: with nothing below them they remove
// nothing but themselves, as in Helm.
func dropNulls(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		if x != nil {
			out[k] = dropNulls(x)
		}
	}
	return out
}

func hasPath(ps []secretfile.Path, p secretfile.Path) bool {
	for _, q := range ps {
		if q.Equal(p) {
			return true
		}
	}
	return false
}

// result encodes the merged keys as ConfigMap text.
func (m *merger) result(files []string) (*Config, error) {
	c := &Config{Data: make(map[string]string, len(m.merged)), Origin: m.origin, Encrypted: m.encrypted, Files: files, layered: m.layered,
		operator: m.operator, OperatorFiles: m.operatorFiles}
	for k, v := range m.merged {
		text, err := encode(v)
		if err != nil {
			last := m.origin[k][len(m.origin[k])-1]
			return nil, errorf(last, k, 0, "%v", err)
		}
		c.Data[k] = text
	}
	for k := range c.Encrypted {
		if _, ok := c.Data[k]; !ok {
			delete(c.Encrypted, k)
		}
	}
	return c, nil
}

// encode writes a value as ConfigMap text: scalars as YAML without the
// trailing newline (a plain string bare: lifecycle compares
// <module>Maintenance and <module>Drift as text, TestMigrationRoundTrip),
// maps and lists as block YAML with sorted keys.
func encode(v any) (string, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	text := string(b)
	switch v.(type) {
	case map[string]any, []any:
		return text, nil
	}
	return strings.TrimSuffix(text, "\n"), nil
}

// parseText reads ConfigMap text as values.parseSection does: YAML, then
// JSON's types.
func parseText(text string) (any, error) {
	j, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// ParseData reads ConfigMap data as the operator does, for comparing two
// versions of it: key to value.
func ParseData(data map[string]string) (map[string]any, error) {
	out := make(map[string]any, len(data))
	for k, text := range data {
		v, err := parseText(text)
		if err != nil {
			return nil, fmt.Errorf("ConfigMap key %s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}
