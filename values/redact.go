package values

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/yaml"
)

// Redacted stands for a secret value wherever values are shown.
const Redacted = "<redacted>"

// MinRedactedText is the shortest secret text redacted inside free text
// (messages, log lines): a shorter value, and a boolean, would turn up
// in unrelated words, so it is hidden only where its key path is known
// (values shown as documents, and schema messages that name the path).
const MinRedactedText = 4

// Redactor hides secret values wherever values are shown
// (docs/operator.md, "Secrets"). It only grows: every secret it is told
// of (Add) stays hidden until the process ends, so a message about data
// that was refused, or that a later change replaced, hides it too. A nil
// Redactor hides nothing. It is safe for concurrent use; reads take no
// lock.
type Redactor struct {
	mu   sync.Mutex
	snap atomic.Pointer[redactSnap]
}

// redactSnap is one immutable state of a Redactor.
type redactSnap struct {
	sens     Sensitive
	patterns map[string]bool
	rep      *strings.Replacer // nil: no pattern
}

// NewRedactor returns an empty Redactor.
func NewRedactor() *Redactor {
	r := &Redactor{}
	r.snap.Store(&redactSnap{patterns: map[string]bool{}})
	return r
}

func (r *Redactor) load() *redactSnap {
	if r == nil {
		return nil
	}
	return r.snap.Load()
}

// Add registers the paths of s and the text of the values at them in
// ConfigMap-shaped data (the values below a path, when it leads to a map
// or a list). A key of data that does not parse contributes its paths
// only.
func (r *Redactor) Add(s Sensitive, data map[string]string) {
	if r == nil || s.Empty() {
		return
	}
	r.add(s, textsAt(s, func(k string) (any, bool) {
		text, ok := data[k]
		if !ok {
			return nil, false
		}
		doc, err := parseSection(k, text)
		return doc, err == nil
	}))
}

// AddValues is Add for values documents keyed as ConfigMap data is (a
// values.yaml file's: "global", a module's key): every document that has
// a key gives its values at the paths (a common values.yaml with a
// module's defaults does not hide the module's own encrypted file).
func (r *Redactor) AddValues(s Sensitive, docs ...Values) {
	if r == nil || s.Empty() {
		return
	}
	var texts []string
	for _, d := range docs {
		texts = append(texts, textsAt(s, func(k string) (any, bool) {
			v, ok := d[k]
			return v, ok
		})...)
	}
	r.add(s, texts)
}

// textsAt are the scalar texts at s's paths of the documents lookup
// finds per key.
func textsAt(s Sensitive, lookup func(key string) (any, bool)) []string {
	var texts []string
	for _, k := range s.Keys() {
		doc, ok := lookup(k)
		if !ok {
			continue
		}
		for _, p := range s.Paths(k) {
			if v, ok := at(doc, p); ok {
				leaves(v, nil, func(_ KeyPath, leaf any) {
					if t, ok := scalarText(leaf); ok {
						texts = append(texts, t)
					}
				})
			}
		}
	}
	return texts
}

// add makes the next snapshot when s or texts bring anything new.
func (r *Redactor) add(s Sensitive, texts []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.snap.Load()
	next := &redactSnap{sens: cur.sens.Union(s), patterns: cur.patterns}
	grown := false
	for _, t := range texts {
		for _, p := range textForms(t) {
			if !next.patterns[p] {
				if !grown {
					next.patterns = make(map[string]bool, len(cur.patterns)+len(texts))
					for q := range cur.patterns {
						next.patterns[q] = true
					}
					grown = true
				}
				next.patterns[p] = true
			}
		}
	}
	if !grown && len(next.sens.paths) == len(cur.sens.paths) && sameSensitive(next.sens, cur.sens) {
		return
	}
	next.rep = cur.rep
	if grown {
		next.rep = replacerOf(next.patterns)
	}
	r.snap.Store(next)
}

func sameSensitive(a, b Sensitive) bool {
	for k, ps := range a.paths {
		if len(b.paths[k]) != len(ps) {
			return false
		}
	}
	return true
}

// trivial are texts never hidden in free text: they are everywhere.
var trivial = map[string]bool{"true": true, "false": true, "null": true, "True": true, "False": true, "yes": true, "no": true}

// textForms are the ways a secret text shows in messages: as it is, as Go
// and JSON quote it (an error's %q, a JSON log line), base64-encoded (a
// chart's b64enc into a Secret's data) and, for a multi-line text, line
// by line.
func textForms(t string) []string {
	if len(t) < MinRedactedText || trivial[t] {
		return nil
	}
	forms := []string{t}
	if q := strconv.Quote(t); q[1:len(q)-1] != t {
		forms = append(forms, q[1:len(q)-1])
	}
	if j, err := json.Marshal(t); err == nil && string(j[1:len(j)-1]) != t {
		forms = append(forms, string(j[1:len(j)-1]))
	}
	forms = append(forms, base64.StdEncoding.EncodeToString([]byte(t)))
	// a multi-line text (a PEM key, a kubeconfig) shows indented where a
	// chart writes it with indent or nindent: each of its lines too
	if strings.Contains(strings.TrimSuffix(t, "\n"), "\n") {
		for _, line := range strings.Split(t, "\n") {
			if line = strings.TrimSpace(line); len(line) >= MinRedactedText && !trivial[line] {
				forms = append(forms, line)
			}
		}
	}
	return forms
}

// replacerOf replaces every pattern, the longest first where several
// start at one place (strings.Replacer tries them in argument order).
func replacerOf(patterns map[string]bool) *strings.Replacer {
	if len(patterns) == 0 {
		return nil
	}
	list := make([]string, 0, len(patterns))
	for p := range patterns {
		list = append(list, p)
	}
	sort.Slice(list, func(i, j int) bool {
		if len(list[i]) != len(list[j]) {
			return len(list[i]) > len(list[j])
		}
		return list[i] < list[j]
	})
	args := make([]string, 0, 2*len(list))
	for _, p := range list {
		args = append(args, p, Redacted)
	}
	return strings.NewReplacer(args...)
}

// Empty is true while the Redactor hides nothing.
func (r *Redactor) Empty() bool {
	s := r.load()
	return s == nil || (s.rep == nil && s.sens.Empty())
}

// Sensitive is every path registered so far.
func (r *Redactor) Sensitive() Sensitive {
	if s := r.load(); s != nil {
		return s.sens
	}
	return Sensitive{}
}

// typeWithData is go-openapi's message that quotes the value it refuses
// (a format: "global.a.b in body must be of type email: \"...\"").
var typeWithData = regexp.MustCompile(`(\S+)(?: in \S+)? must be of type [^\s:]+: "`)

// Text is s with every secret text replaced by Redacted, and the value a
// schema message quotes for a secret path whatever its length.
func (r *Redactor) Text(s string) string {
	snap := r.load()
	if snap == nil {
		return s
	}
	if !snap.sens.Empty() && strings.Contains(s, " must be of type ") {
		s = redactQuoted(s, snap.sens)
	}
	if snap.rep != nil {
		s = snap.rep.Replace(s)
	}
	return s
}

// redactQuoted hides the quoted value of each schema message about a
// secret path.
func redactQuoted(s string, sens Sensitive) string {
	var b strings.Builder
	rest := s
	for {
		m := typeWithData.FindStringSubmatchIndex(rest)
		if m == nil {
			break
		}
		name := strings.TrimLeft(rest[m[2]:m[3]], "-*(")
		end := m[1] - 1 // the opening quote
		q, err := strconv.QuotedPrefix(rest[end:])
		if err != nil || !sens.covers(name) {
			b.WriteString(rest[:m[1]])
			rest = rest[m[1]:]
			continue
		}
		b.WriteString(rest[:end])
		b.WriteString(strconv.Quote(Redacted))
		rest = rest[end+len(q):]
	}
	if b.Len() == 0 {
		return s
	}
	b.WriteString(rest)
	return b.String()
}

// JSON is a JSON document with every secret text in its strings replaced
// by Redacted; it stays valid JSON.
func (r *Redactor) JSON(b []byte) []byte {
	if r.Empty() {
		return b
	}
	out := []byte(r.Text(string(b)))
	// a schema message's quotes are escaped in JSON, and a secret may
	// begin inside an escape: those are redacted in the decoded strings
	if json.Valid(out) && !bytes.Contains(b, []byte(" must be of type ")) {
		return out
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return out
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r.anyText(v)); err != nil {
		return out
	}
	return buf.Bytes()
}

func (r *Redactor) anyText(v any) any {
	switch t := v.(type) {
	case string:
		return r.Text(t)
	case map[string]any:
		for k, e := range t {
			t[k] = r.anyText(e)
		}
	case []any:
		for i, e := range t {
			t[i] = r.anyText(e)
		}
	}
	return v
}

// Values is a copy of a values document (sections under their keys:
// global, module values or config values) with every secret path's value
// replaced by Redacted, and every secret text in its other strings.
func (r *Redactor) Values(v Values) Values {
	if r.Empty() || v == nil {
		return v
	}
	out := deepCopy(map[string]any(v)).(map[string]any)
	sens := r.Sensitive()
	for k, sec := range out {
		for _, p := range sens.Paths(k) {
			sec = redactAt(sec, p)
		}
		out[k] = r.anyText(sec)
	}
	return out
}

// Data is ConfigMap-shaped data (key to YAML text) as Values redacts it:
// a key with a secret path is written again as YAML; a key that does not
// parse shows as Redacted when it has one.
func (r *Redactor) Data(data map[string]string) map[string]string {
	if r.Empty() || data == nil {
		return data
	}
	sens := r.Sensitive()
	out := make(map[string]string, len(data))
	for k, text := range data {
		ps := sens.Paths(k)
		if len(ps) == 0 {
			out[k] = r.Text(text)
			continue
		}
		doc, err := parseSection(k, text)
		if err != nil {
			out[k] = Redacted
			continue
		}
		for _, p := range ps {
			doc = redactAt(doc, p)
		}
		y, err := yaml.Marshal(r.anyText(doc))
		if err != nil {
			out[k] = Redacted
			continue
		}
		out[k] = string(y)
	}
	return out
}
