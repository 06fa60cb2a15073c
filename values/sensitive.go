package values

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// KeyPath is a value's place below a ConfigMap key: map keys (string)
// and list indexes (int), from the top, as secretfile.Path; empty is the
// key's whole value.
type KeyPath []any

// String writes a path as a.b[0].c.
func (p KeyPath) String() string {
	var b strings.Builder
	for i, e := range p {
		switch v := e.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", v)
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, v)
		}
	}
	return b.String()
}

// dotted is the path as go-openapi names it in its messages, below the
// section: section.a.b.0.c.
func (p KeyPath) dotted(section string) string {
	var b strings.Builder
	b.WriteString(section)
	for _, e := range p {
		b.WriteByte('.')
		fmt.Fprint(&b, e)
	}
	return b.String()
}

func (p KeyPath) equal(o KeyPath) bool { return slices.Equal(p, o) }

// Sensitive is a set of secret config values: per ConfigMap key, the
// paths below it whose values are secret (docs/operator.md, "Secrets").
// It is a value: the methods that change it return a new one.
type Sensitive struct {
	paths map[string][]KeyPath
}

// SensitiveFromData is every leaf of every key of ConfigMap-shaped data
// (a values Secret's): each key's text is YAML. A key that does not parse
// is an error naming it, with no value of it in the message.
func SensitiveFromData(data map[string]string) (Sensitive, error) {
	s := Sensitive{paths: map[string][]KeyPath{}}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := parseSection("key "+k, data[k])
		if err != nil {
			return Sensitive{}, err
		}
		leaves(v, nil, func(p KeyPath, _ any) { s.paths[k] = append(s.paths[k], p) })
	}
	return s, nil
}

// SensitiveFromEncrypted is the encrypted paths of a cluster's config in
// git (clusterconfig.Config.Encrypted: key to secretfile.Path list).
func SensitiveFromEncrypted[P ~[]any](enc map[string][]P) Sensitive {
	s := Sensitive{paths: make(map[string][]KeyPath, len(enc))}
	for k, ps := range enc {
		for _, p := range ps {
			s.paths[k] = append(s.paths[k], KeyPath(slices.Clone(p)))
		}
	}
	return s
}

// Union is both sets, each path once.
func (s Sensitive) Union(o Sensitive) Sensitive {
	if o.Empty() {
		return s
	}
	if s.Empty() {
		return o
	}
	out := Sensitive{paths: make(map[string][]KeyPath, len(s.paths)+len(o.paths))}
	for k, ps := range s.paths {
		out.paths[k] = slices.Clone(ps)
	}
	for k, ps := range o.paths {
		for _, p := range ps {
			if !slices.ContainsFunc(out.paths[k], p.equal) {
				out.paths[k] = append(out.paths[k], p)
			}
		}
	}
	return out
}

// Empty is true without any path.
func (s Sensitive) Empty() bool { return len(s.paths) == 0 }

// Keys are the ConfigMap keys with secret values, sorted.
func (s Sensitive) Keys() []string {
	keys := make([]string, 0, len(s.paths))
	for k := range s.paths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Paths are the secret paths below key.
func (s Sensitive) Paths(key string) []KeyPath { return s.paths[key] }

// covers says whether the go-openapi name of a value (section.a.0.b) is a
// secret path or below one.
func (s Sensitive) covers(name string) bool {
	for k, ps := range s.paths {
		if name != k && !strings.HasPrefix(name, k+".") {
			continue
		}
		for _, p := range ps {
			d := p.dotted(k)
			if len(p) == 0 {
				d = k
			}
			if name == d || strings.HasPrefix(name, d+".") {
				return true
			}
		}
	}
	return false
}

// leaves calls fn with the path and value of every scalar below v (null
// and empty maps and lists are no values).
func leaves(v any, path KeyPath, fn func(KeyPath, any)) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			leaves(e, append(slices.Clone(path), k), fn)
		}
	case Values:
		leaves(map[string]any(t), path, fn)
	case []any:
		for i, e := range t {
			leaves(e, append(slices.Clone(path), i), fn)
		}
	case nil:
	default:
		fn(path, t)
	}
}

// at is the value at p below v, if there is one.
func at(v any, p KeyPath) (any, bool) {
	for _, e := range p {
		switch k := e.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				if vv, isV := v.(Values); isV {
					m, ok = map[string]any(vv), true
				}
			}
			if !ok {
				return nil, false
			}
			if v, ok = m[k]; !ok {
				return nil, false
			}
		case int:
			l, ok := v.([]any)
			if !ok || k < 0 || k >= len(l) {
				return nil, false
			}
			v = l[k]
		default:
			return nil, false
		}
	}
	return v, true
}

// redactAt replaces every scalar at or below p in v (a copy the caller
// owns) with Redacted; it returns the new v.
func redactAt(v any, p KeyPath) any {
	if len(p) == 0 {
		return redactAll(v)
	}
	switch k := p[0].(type) {
	case string:
		if m, ok := v.(map[string]any); ok {
			if e, ok := m[k]; ok {
				m[k] = redactAt(e, p[1:])
			}
		}
	case int:
		if l, ok := v.([]any); ok && k >= 0 && k < len(l) {
			l[k] = redactAt(l[k], p[1:])
		}
	}
	return v
}

func redactAll(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = redactAll(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = redactAll(e)
		}
		return t
	case nil:
		return nil
	}
	return Redacted
}

// scalarText is a scalar's text as it shows in messages: a string as it
// is, a number as JSON writes it; booleans have none worth hiding.
func scalarText(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64), true
	case int:
		return strconv.Itoa(t), true
	case int64:
		return strconv.FormatInt(t, 10), true
	}
	return "", false
}
