package objectpatch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/itchyny/gojq"
	yamlv3 "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// MaxOps bounds the operations of one hook run (docs/security.md, "Limits").
const MaxOps = 1000

// The operations a hook may write.
const (
	CreateOrUpdate     = "CreateOrUpdate"
	Create             = "Create"
	CreateIfNotExists  = "CreateIfNotExists"
	Delete             = "Delete"
	DeleteInBackground = "DeleteInBackground"
	DeleteNonCascading = "DeleteNonCascading"
	MergePatch         = "MergePatch"
	JSONPatch          = "JSONPatch"
	JQPatch            = "JQPatch"
)

// Op is one checked operation.
type Op struct {
	Index       int // 1-based, in the file's order
	Operation   string
	APIVersion  string
	Kind        string
	Namespace   string
	Name        string
	Subresource string // "" or e.g. "status" (a leading "/" is dropped)
	// Object is the object of the Create operations.
	Object *unstructured.Unstructured
	// Patch is the JSON body of a MergePatch or JSONPatch.
	Patch []byte
	// JQ is the compiled jqFilter of a JQPatch.
	JQ                  *gojq.Code
	IgnoreMissingObject bool
	IgnoreHookError     bool
}

// String names the operation in errors: its index, operation and object.
func (o Op) String() string {
	ns := o.Namespace
	if ns != "" {
		ns += "/"
	}
	s := fmt.Sprintf("operation %d (%s %s %s%s", o.Index, o.Operation, o.Kind, ns, o.Name)
	if o.Subresource != "" {
		s += ", subresource " + o.Subresource
	}
	return s + ")"
}

// spec is one operation as written; the object and patches stay raw
// because each may be given inline or as a YAML/JSON string.
type spec struct {
	Operation           string          `json:"operation"`
	APIVersion          string          `json:"apiVersion"`
	Kind                string          `json:"kind"`
	Namespace           string          `json:"namespace"`
	Name                string          `json:"name"`
	Subresource         string          `json:"subresource"`
	Object              json.RawMessage `json:"object"`
	JQFilter            string          `json:"jqFilter"`
	MergePatch          json.RawMessage `json:"mergePatch"`
	JSONPatch           json.RawMessage `json:"jsonPatch"`
	IgnoreMissingObject bool            `json:"ignoreMissingObject"`
	IgnoreHookError     bool            `json:"ignoreHookError"`
}

// Parse reads a KUBERNETES_PATCH_PATH file: a stream of JSON documents
// (one a line, say) or, failing that, YAML documents separated by "---"
// (where a document may itself be JSON). More than max operations is an
// error, as is any bad operation, named by its index.
func Parse(b []byte, max int) ([]Op, error) {
	docs, err := jsonDocs(b, max)
	if err != nil {
		if errors.Is(err, errTooMany) {
			return nil, err
		}
		if docs, err = yamlDocs(b, max); err != nil {
			return nil, err
		}
	}
	ops := make([]Op, 0, len(docs))
	for i, d := range docs {
		op, err := parseOp(i+1, d)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}

var errTooMany = errors.New("too many operations")

func tooMany(max int) error {
	return fmt.Errorf("%w: more than %d", errTooMany, max)
}

func jsonDocs(b []byte, max int) ([]json.RawMessage, error) {
	var docs []json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var d json.RawMessage
		if err := dec.Decode(&d); err == io.EOF {
			return docs, nil
		} else if err != nil {
			return nil, err
		}
		if len(docs) == max {
			return nil, tooMany(max)
		}
		docs = append(docs, d)
	}
}

func yamlDocs(b []byte, max int) ([]json.RawMessage, error) {
	var docs []json.RawMessage
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for n := 1; ; n++ {
		doc, err := r.Read()
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 || isComment(doc) {
			continue
		}
		j, err := yamlToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: neither JSON nor YAML: %w", n, err)
		}
		if string(j) == "null" {
			continue
		}
		if len(docs) == max {
			return nil, tooMany(max)
		}
		docs = append(docs, j)
	}
}

func isComment(doc []byte) bool {
	for _, l := range strings.Split(string(doc), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

func parseOp(i int, raw json.RawMessage) (Op, error) {
	fail := func(format string, a ...any) (Op, error) {
		return Op{}, fmt.Errorf("operation %d: %s", i, fmt.Sprintf(format, a...))
	}
	var s spec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return fail("%v", err)
	}
	op := Op{Index: i, Operation: s.Operation, APIVersion: s.APIVersion, Kind: s.Kind,
		Namespace: s.Namespace, Name: s.Name, Subresource: strings.TrimPrefix(s.Subresource, "/"),
		IgnoreMissingObject: s.IgnoreMissingObject, IgnoreHookError: s.IgnoreHookError}
	switch s.Operation {
	case Create, CreateOrUpdate, CreateIfNotExists:
		obj, err := object(s.Object)
		if err != nil {
			return fail("%s: object: %v", s.Operation, err)
		}
		op.Object, op.APIVersion, op.Kind = obj, obj.GetAPIVersion(), obj.GetKind()
		op.Namespace, op.Name = obj.GetNamespace(), obj.GetName()
		return op, nil
	case "":
		return fail("no operation")
	}
	if s.Kind == "" || s.Name == "" {
		return fail("%s: kind and name are required", s.Operation)
	}
	switch s.Operation {
	case Delete, DeleteInBackground, DeleteNonCascading:
	case MergePatch:
		p, err := patchBody(s.MergePatch, '{')
		if err != nil {
			return fail("%s %s/%s: mergePatch: %v", s.Operation, s.Kind, s.Name, err)
		}
		op.Patch = p
	case JSONPatch:
		p, err := patchBody(s.JSONPatch, '[')
		if err != nil {
			return fail("%s %s/%s: jsonPatch: %v", s.Operation, s.Kind, s.Name, err)
		}
		op.Patch = p
	case JQPatch:
		if len(s.JQFilter) > MaxJQFilter {
			// gojq compiles nesting recursively: a deep filter would
			// overflow the stack, which no recover catches
			return fail("%s %s/%s: jqFilter: %d bytes, more than %d", s.Operation, s.Kind, s.Name, len(s.JQFilter), MaxJQFilter)
		}
		q, err := gojq.Parse(s.JQFilter)
		if err == nil && strings.TrimSpace(s.JQFilter) == "" {
			err = errors.New("empty")
		}
		if err == nil {
			op.JQ, err = gojq.Compile(q)
		}
		if err != nil {
			return fail("%s %s/%s: jqFilter: %v", s.Operation, s.Kind, s.Name, err)
		}
	default:
		return fail("unknown operation %q", s.Operation)
	}
	return op, nil
}

// unquote returns raw's content when raw is a JSON string (an object or a
// patch given as YAML or JSON text), else raw.
func unquote(raw json.RawMessage) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("missing")
	}
	if raw[0] != '"' {
		return raw, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	j, err := yamlToJSON([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("string is neither JSON nor YAML: %w", err)
	}
	return j, nil
}

func object(raw json.RawMessage) (*unstructured.Unstructured, error) {
	b, err := unquote(raw)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 || b[0] != '{' {
		return nil, errors.New("want an object")
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	if u.GetName() == "" {
		// generateName alone would make a new object on every retry
		return nil, errors.New("metadata.name is required")
	}
	return u, nil
}

// patchBody returns a patch as JSON, checking it is an object ('{', merge
// patch) or an array ('[', JSON patch) and not empty.
func patchBody(raw json.RawMessage, want byte) ([]byte, error) {
	b, err := unquote(raw)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	switch p := v.(type) {
	case map[string]any:
		if want == '{' && len(p) > 0 {
			return b, nil
		}
	case []any:
		if want == '[' && len(p) > 0 {
			return b, nil
		}
	}
	if want == '{' {
		return nil, errors.New("want a non-empty object")
	}
	return nil, errors.New("want a non-empty array of operations")
}

// OnHookFailure returns the operations applied although the hook failed:
// patches (MergePatch, JSONPatch, JQPatch) of the status subresource marked
// ignoreHookError, so a hook can report why it failed on its object.
func OnHookFailure(ops []Op) []Op {
	var out []Op
	for _, o := range ops {
		switch o.Operation {
		case MergePatch, JSONPatch, JQPatch:
			if o.IgnoreHookError && o.Subresource == "status" {
				out = append(out, o)
			}
		}
	}
	return out
}

// MaxJQFilter bounds a JQPatch's filter text (docs/security.md, "Limits").
const MaxJQFilter = 16 << 10

// yamlToJSON converts YAML without anchors or aliases: the YAML library
// bounds aliases by node count, not size, so a small document of aliases
// to a long string would expand without bound when written as JSON.
func yamlToJSON(doc []byte) ([]byte, error) {
	var n yamlv3.Node
	if err := yamlv3.Unmarshal(doc, &n); err != nil {
		return nil, err
	}
	if hasAnchors(&n) {
		return nil, errors.New("YAML anchors and aliases are not allowed")
	}
	return yaml.YAMLToJSON(doc)
}

func hasAnchors(n *yamlv3.Node) bool {
	if n.Kind == yamlv3.AliasNode || n.Anchor != "" {
		return true
	}
	for _, c := range n.Content {
		if hasAnchors(c) {
			return true
		}
	}
	return false
}
