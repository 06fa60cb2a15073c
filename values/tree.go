package values

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"

	"sigs.k8s.io/yaml"
)

// Values is a JSON-compatible document: maps are map[string]any, lists are
// []any, numbers are float64. Values handed out by this package are copies
// that the caller may change.
type Values map[string]any

// ParseYAML decodes a YAML (or JSON) document into Values. source names the
// file or key in errors; YAML errors carry the line. An empty document is an
// empty map.
func ParseYAML(source string, data []byte) (Values, error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	switch t := v.(type) {
	case nil:
		return Values{}, nil
	case map[string]any:
		return Values(t), nil
	default:
		return nil, fmt.Errorf("%s: want a map at the top level, got %s", source, kindOf(v))
	}
}

// parseSection decodes one YAML value (a ConfigMap key's string).
func parseSection(source, data string) (any, error) {
	j, err := yaml.YAMLToJSON([]byte(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return v, nil
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any, Values:
		return "a map"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// deepCopy copies a JSON tree.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = deepCopy(e)
		}
		return out
	case Values:
		return map[string]any(deepCopy(map[string]any(t)).(map[string]any))
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopy(e)
		}
		return out
	default:
		return v
	}
}

// merge returns base with over merged in: maps merge key by key, recursively;
// anything else in over (scalar, list, null) replaces what base had.
// Merge merges over into a copy of base by the values rule: maps key by
// key, anything else replaced.
func Merge(base, over any) any { return merge(base, over) }

func merge(base, over any) any {
	bm, ok1 := base.(map[string]any)
	om, ok2 := over.(map[string]any)
	if !ok1 || !ok2 {
		return deepCopy(over)
	}
	out := make(map[string]any, len(bm)+len(om))
	maps.Copy(out, bm)
	for k, v := range om {
		if prev, ok := out[k]; ok {
			out[k] = merge(prev, v)
		} else {
			out[k] = deepCopy(v)
		}
	}
	return out
}

func equal(a, b any) bool { return reflect.DeepEqual(a, b) }

// asMap returns v as a map, treating absence as an empty map.
func asMap(v any) (map[string]any, bool) {
	switch t := v.(type) {
	case nil:
		return map[string]any{}, true
	case map[string]any:
		return t, true
	case Values:
		return map[string]any(t), true
	}
	return nil, false
}
