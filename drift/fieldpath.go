package drift

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Conflict is a field the chart sets that another field manager owns, as a
// server-side apply without force reports it.
type Conflict struct {
	// Field is the API server's path: .spec.replicas,
	// .spec.template.spec.containers[name="app"].image.
	Field       string `json:"field"`
	Manager     string `json:"manager"`
	Subresource string `json:"subresource,omitempty"`
}

// String is the field and its owner, for logs and /status.
func (c Conflict) String() string {
	s := strings.TrimPrefix(c.Field, ".") + " (" + c.Manager
	if c.Subresource != "" {
		s += ", /" + c.Subresource
	}
	return s + ")"
}

// conflictMessage is how the API server names a cause's manager (see
// k8s.io/apimachinery's managedfields): `conflict with "NAME"`, then
// ` with subresource "SUB"` when it wrote through one.
var conflictMessage = regexp.MustCompile(`^conflict with ("(?:[^"\\]|\\.)*")(?: with subresource ("(?:[^"\\]|\\.)*"))?`)

// conflicts reads the conflict causes of a failed apply; ok is false when
// err is not an apply conflict.
func conflicts(err error) ([]Conflict, bool) {
	var status apierrors.APIStatus
	if !apierrors.IsConflict(err) || !errors.As(err, &status) {
		return nil, false
	}
	details := status.Status().Details
	if details == nil {
		return nil, false
	}
	var out []Conflict
	for _, c := range details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		m := conflictMessage.FindStringSubmatch(c.Message)
		if m == nil {
			continue
		}
		cf := Conflict{Field: c.Field}
		cf.Manager, _ = strconv.Unquote(m[1])
		if m[2] != "" {
			cf.Subresource, _ = strconv.Unquote(m[2])
		}
		out = append(out, cf)
	}
	return out, len(out) > 0
}

// prune removes the field at an API server path from obj; it reports
// whether it found it.
func prune(obj map[string]any, path string) (bool, error) {
	_, found, err := pruneNode(obj, path, path)
	return found, err
}

// pruneNode removes what rest names below node and returns node as it is
// after that (a list may be a new slice).
func pruneNode(node any, rest, path string) (any, bool, error) {
	switch {
	case rest == "":
		return node, false, nil
	case rest[0] == '.':
		m, ok := node.(map[string]any)
		if !ok {
			return node, false, nil
		}
		k := fieldName(m, rest[1:])
		if k == "" {
			return node, false, nil
		}
		next := rest[1+len(k):]
		if next == "" {
			delete(m, k)
			return m, true, nil
		}
		child, found, err := pruneNode(m[k], next, path)
		if found {
			m[k] = child
		}
		return m, found, err
	case rest[0] == '[':
		end, match, err := listElement(rest)
		if err != nil {
			return node, false, fmt.Errorf("field %s: %w", path, err)
		}
		list, ok := node.([]any)
		if !ok {
			return node, false, nil
		}
		for i, el := range list {
			if !match(i, el) {
				continue
			}
			next := rest[end:]
			if next == "" {
				return append(list[:i:i], list[i+1:]...), true, nil
			}
			child, found, err := pruneNode(el, next, path)
			if found {
				list[i] = child
			}
			return list, found, err
		}
		return node, false, nil
	default:
		return node, false, fmt.Errorf("field %s: unexpected %q", path, rest[:1])
	}
}

// fieldName is the longest key of m that the path continues with, followed
// by the end, a '.' or a '[': a key may itself hold dots (an annotation's).
func fieldName(m map[string]any, rest string) string {
	best := ""
	for k := range m {
		if len(k) <= len(best) || !strings.HasPrefix(rest, k) {
			continue
		}
		if len(rest) == len(k) || rest[len(k)] == '.' || rest[len(k)] == '[' {
			best = k
		}
	}
	return best
}

// listElement parses one "[...]" of a path: [name="app",port=80] (the
// keys of an associative list, values as JSON), [="value"] (a set's
// element) or [3] (an index). It returns where it ends and a matcher.
func listElement(s string) (int, func(int, any) bool, error) {
	if len(s) > 1 && s[1] >= '0' && s[1] <= '9' {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return 0, nil, errors.New("unterminated [")
		}
		n, err := strconv.Atoi(s[1:end])
		if err != nil {
			return 0, nil, fmt.Errorf("bad list element %q", s[:end+1])
		}
		return end + 1, func(j int, _ any) bool { return j == n }, nil
	}
	i := 1
	var keys [][2]string // name ("" for a set's element), JSON value
	for {
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return 0, nil, fmt.Errorf("bad list element in %q", s)
		}
		name := s[i : i+eq]
		i += eq + 1
		n, err := jsonValueLen(s[i:])
		if err != nil {
			return 0, nil, err
		}
		keys = append(keys, [2]string{name, s[i : i+n]})
		i += n
		if i >= len(s) {
			return 0, nil, errors.New("unterminated [")
		}
		if s[i] == ']' {
			i++
			break
		}
		if s[i] != ',' {
			return 0, nil, fmt.Errorf("unexpected %q in list element", s[i:i+1])
		}
		i++
	}
	want := make([]any, len(keys))
	for j, kv := range keys {
		if err := json.Unmarshal([]byte(kv[1]), &want[j]); err != nil {
			return 0, nil, fmt.Errorf("bad value %s in list element", kv[1])
		}
	}
	return i, func(_ int, el any) bool {
		for j, kv := range keys {
			got := el // a set's element
			if kv[0] != "" {
				m, ok := el.(map[string]any)
				if !ok {
					return false
				}
				got = m[kv[0]]
			}
			if !sameJSON(got, want[j]) {
				return false
			}
		}
		return true
	}, nil
}

// jsonValueLen is the length of the JSON scalar at the start of s.
func jsonValueLen(s string) (int, error) {
	if strings.HasPrefix(s, `"`) {
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '"':
				return i + 1, nil
			}
		}
		return 0, errors.New("unterminated string in list element")
	}
	end := strings.IndexAny(s, ",]")
	if end < 0 {
		return 0, errors.New("unterminated [")
	}
	return end, nil
}

// sameJSON compares two decoded JSON scalars, numbers by value.
func sameJSON(a, b any) bool {
	ab, errA := json.Marshal(a)
	bb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ab) == string(bb)
}
