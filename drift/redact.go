package drift

import (
	"bufio"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// A diff shows values; these hide the values of sensitive objects
// wherever they can be (docs/security.md, "Who sees what"):
//   - a Secret's data and stringData, and every field of a kind named
//     sensitive (Options.Sensitive) but its apiVersion, kind and metadata;
//   - in a sensitive object, any string (an annotation: kubectl's
//     last-applied-configuration) that parses as a JSON or YAML mapping
//     or list, since it may embed the object;
//   - in any object, a string that embeds a sensitive object (a Secret's
//     manifest in a ConfigMap or an annotation).
//
// A hidden value shows as "(redacted)", or "(redacted, differs)" on the
// chart's side where it differs from the live one.
const (
	redactedMark = "(redacted)"
	differsMark  = "(redacted, differs)"
)

// secretKind is always sensitive.
var secretKind = schema.GroupKind{Kind: "Secret"}

// ParseKinds reads a list of kinds, each Kind (the core group) or
// group/Kind, as ADDON_OPERATOR_DRIFT_SENSITIVE_KINDS takes them.
func ParseKinds(list []string) ([]schema.GroupKind, error) {
	var out []schema.GroupKind
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		group, kind, ok := strings.Cut(s, "/")
		if !ok {
			group, kind = "", s
		}
		if kind == "" || strings.Contains(kind, "/") || strings.ContainsAny(s, " \t") {
			return nil, fmt.Errorf("sensitive kind %q: want Kind or group/Kind", s)
		}
		out = append(out, schema.GroupKind{Group: group, Kind: kind})
	}
	return out, nil
}

// redactor hides the values of sensitive objects in a diff.
type redactor struct {
	kinds map[schema.GroupKind]bool
}

func newRedactor(kinds []schema.GroupKind) redactor {
	r := redactor{kinds: map[schema.GroupKind]bool{secretKind: true}}
	for _, k := range kinds {
		r.kinds[k] = true
	}
	return r
}

// sensitive: obj (a parsed object) is of a sensitive kind.
func (r redactor) sensitive(obj map[string]any) bool {
	kind, _ := obj["kind"].(string)
	apiVersion, _ := obj["apiVersion"].(string)
	if kind == "" || apiVersion == "" {
		return false
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return false
	}
	return r.kinds[schema.GroupKind{Group: gv.Group, Kind: kind}]
}

// redact hides, in place, what the diff of live and applied must not show.
func (r redactor) redact(live, applied map[string]any) {
	if r.sensitive(live) || r.sensitive(applied) {
		secret := coreSecret(live) || coreSecret(applied)
		for _, k := range unionKeys(live, applied) {
			switch {
			case k == "apiVersion" || k == "kind" || k == "metadata":
			case secret && k != "data" && k != "stringData":
				// a Secret's type and immutable are not its values
			default:
				maskPair(live, applied, k)
			}
		}
		// any embedded document in the metadata (annotations) goes whole
		r.walk(live["metadata"], applied["metadata"], func(l, a string) bool { return isDocument(l) || isDocument(a) })
		return
	}
	r.walk(live, applied, func(l, a string) bool { return r.embedsSensitive(l) || r.embedsSensitive(a) })
}

// walk replaces, in the maps and lists of l and a taken side by side,
// each string that hide says must go.
func (r redactor) walk(l, a any, hide func(l, a string) bool) {
	switch lv := l.(type) {
	case map[string]any:
		av, _ := a.(map[string]any)
		for k := range lv {
			ls, lok := lv[k].(string)
			as, aok := av[k].(string)
			if (lok || aok) && hide(ls, as) {
				maskPair(lv, av, k)
				continue
			}
			r.walk(lv[k], av[k], hide)
		}
		for k := range av {
			if _, ok := lv[k]; ok {
				continue
			}
			if as, ok := av[k].(string); ok && hide("", as) {
				av[k] = redactedMark
				continue
			}
			r.walk(nil, av[k], hide)
		}
	case []any:
		av, _ := a.([]any)
		for i := range lv {
			var ai any
			if i < len(av) {
				ai = av[i]
			}
			ls, lok := lv[i].(string)
			as, aok := ai.(string)
			if (lok || aok) && hide(ls, as) {
				if i < len(av) {
					_, av[i] = maskValues(lv[i], av[i])
				}
				lv[i] = redactedMark
				continue
			}
			r.walk(lv[i], ai, hide)
		}
		for i := len(lv); i < len(av); i++ {
			if as, ok := av[i].(string); ok && hide("", as) {
				av[i] = redactedMark
				continue
			}
			r.walk(nil, av[i], hide)
		}
	case nil:
		// only the applied side has it
		switch av := a.(type) {
		case map[string]any:
			r.walk(map[string]any{}, av, hide)
		case []any:
			r.walk([]any{}, av, hide)
		}
	}
}

func coreSecret(obj map[string]any) bool {
	return obj["kind"] == "Secret" && obj["apiVersion"] == "v1"
}

// maskPair hides key k of both sides: each leaf of a mapping or list
// (so the diff still shows which keys changed), or the value whole.
func maskPair(live, applied map[string]any, k string) {
	lv, lok := live[k]
	av, aok := applied[k]
	switch {
	case lok && aok:
		live[k], applied[k] = maskValues(lv, av)
	case lok:
		live[k], _ = maskValues(lv, nil)
	case aok:
		_, applied[k] = maskValues(nil, av)
	}
}

// maskValues hides the leaves of l and a, marking those of a that differ
// from l's.
func maskValues(l, a any) (any, any) {
	lm, lIsMap := l.(map[string]any)
	am, aIsMap := a.(map[string]any)
	if lIsMap && (aIsMap || a == nil) || aIsMap && l == nil {
		nl, na := map[string]any{}, map[string]any{}
		for _, k := range unionKeys(lm, am) {
			lv, lok := lm[k]
			av, aok := am[k]
			var ml, ma any
			switch {
			case lok && aok:
				ml, ma = maskValues(lv, av)
			case lok:
				ml, _ = maskValues(lv, nil)
			default:
				_, ma = maskValues(nil, av)
			}
			if lok {
				nl[k] = ml
			}
			if aok {
				na[k] = ma
			}
		}
		return orNil(nl, l != nil), orNil(na, a != nil)
	}
	var ml, ma any
	if l != nil {
		ml = redactedMark
	}
	if a != nil {
		ma = redactedMark
		if l != nil && !reflect.DeepEqual(l, a) {
			ma = differsMark
		}
	}
	return ml, ma
}

func orNil(m map[string]any, present bool) any {
	if !present {
		return nil
	}
	return m
}

// isDocument: s parses as a JSON or YAML mapping or list (a plain word
// or sentence does not).
func isDocument(s string) bool {
	if !strings.ContainsAny(s, ":{[-") {
		return false
	}
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		// a stream of several documents
		return len(documents(s)) > 0
	}
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// embedsSensitive: s holds, as JSON or YAML (of one or more documents),
// an object of a sensitive kind, at any depth.
func (r redactor) embedsSensitive(s string) bool {
	if !strings.Contains(s, "kind") {
		return false // cheap: no object without it
	}
	for _, d := range documents(s) {
		if r.contains(d) {
			return true
		}
	}
	return false
}

func (r redactor) contains(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		if r.sensitive(t) {
			return true
		}
		for _, x := range t {
			if r.contains(x) {
				return true
			}
		}
	case []any:
		for _, x := range t {
			if r.contains(x) {
				return true
			}
		}
	case string:
		// a document in a document: a manifest in an annotation of an
		// object in a ConfigMap
		return r.embedsSensitive(t)
	}
	return false
}

// documents are the mappings and lists of a YAML (or JSON) stream.
func documents(s string) []any {
	rd := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(s)))
	var out []any
	for {
		doc, err := rd.Read()
		if err != nil { // io.EOF ends the stream
			return out
		}
		var v any
		if yaml.Unmarshal(doc, &v) != nil {
			continue
		}
		switch v.(type) {
		case map[string]any, []any:
			out = append(out, v)
		}
	}
}
