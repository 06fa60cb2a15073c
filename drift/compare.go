package drift

import (
	"reflect"
	"regexp"
	"sort"
	"strconv"
)

// serverSet are top-level and metadata fields the API server writes on
// every request: a difference there is never drift.
var (
	serverSetTop  = map[string]bool{"status": true}
	serverSetMeta = map[string]bool{"managedFields": true, "resourceVersion": true, "generation": true}
)

// Compare lists the field paths where the object after a dry-run apply of
// the chart's object differs from the live one, in key order; nil when equal.
// Fields the API server sets itself (status, metadata.managedFields,
// resourceVersion, generation) are left out. Lists are compared by
// position: a changed element is reported at its index, a list whose
// length changed at the list.
func Compare(live, applied map[string]any) []string {
	var out []string
	keys := unionKeys(live, applied)
	for _, k := range keys {
		if serverSetTop[k] {
			continue
		}
		if k == "metadata" {
			lm, _ := live[k].(map[string]any)
			am, _ := applied[k].(map[string]any)
			for _, mk := range unionKeys(lm, am) {
				if serverSetMeta[mk] {
					continue
				}
				out = compareValue(out, joinKey("metadata", mk), lm[mk], am[mk])
			}
			continue
		}
		out = compareValue(out, joinKey("", k), live[k], applied[k])
	}
	return out
}

func compareValue(out []string, path string, a, b any) []string {
	switch av := a.(type) {
	case map[string]any:
		if bv, ok := b.(map[string]any); ok {
			for _, k := range unionKeys(av, bv) {
				out = compareValue(out, joinKey(path, k), av[k], bv[k])
			}
			return out
		}
	case []any:
		if bv, ok := b.([]any); ok && len(av) == len(bv) {
			for i := range av {
				out = compareValue(out, path+"["+strconv.Itoa(i)+"]", av[i], bv[i])
			}
			return out
		}
	}
	if !reflect.DeepEqual(a, b) {
		out = append(out, path)
	}
	return out
}

func unionKeys(a, b map[string]any) []string {
	seen := make(map[string]bool, len(a)+len(b))
	keys := make([]string, 0, len(a)+len(b))
	for _, m := range []map[string]any{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// joinKey writes a path as kubectl's JSONPath does: spec.replicas, and
// metadata.annotations["example.com/key"] for a key that is not a name.
func joinKey(path, k string) string {
	if !plainKey.MatchString(k) {
		return path + "[" + strconv.Quote(k) + "]"
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

// Covers reports whether every field the chart sets has the same value in
// the live object: then applying it changes nothing, and the dry-run is
// not needed. It is conservative: a list must have as many elements as
// the chart's, and a value the API server normalises (a quantity written
// another way) is not covered; such objects go to the dry-run.
func Covers(live, desired map[string]any) bool {
	return covers(live, desired)
}

func covers(live, desired any) bool {
	switch dv := desired.(type) {
	case map[string]any:
		lv, ok := live.(map[string]any)
		if !ok {
			return len(dv) == 0 && live == nil
		}
		for k, v := range dv {
			if !covers(lv[k], v) {
				return false
			}
		}
		return true
	case []any:
		lv, ok := live.([]any)
		if !ok || len(lv) != len(dv) {
			return false
		}
		for i := range dv {
			if !covers(lv[i], dv[i]) {
				return false
			}
		}
		return true
	case nil:
		return live == nil
	}
	if df, ok := number(desired); ok {
		lf, ok := number(live)
		return ok && lf == df
	}
	return desired == live
}

// number reads a JSON number as decoded by either parser (int64 from the
// API's, float64 from YAML's).
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case int:
		return float64(n), true
	}
	return 0, false
}
