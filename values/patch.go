package values

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

// Operation is one RFC 6902 operation.
type Operation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from,omitempty"`
	Value any    `json:"value,omitempty"`
}

// MarshalJSON keeps "value" for add/replace/test even when it is null.
func (o Operation) MarshalJSON() ([]byte, error) {
	m := map[string]any{"op": o.Op, "path": o.Path}
	if o.From != "" {
		m["from"] = o.From
	}
	switch o.Op {
	case "add", "replace", "test":
		m["value"] = o.Value
	}
	return json.Marshal(m)
}

// Patch is an ordered list of operations.
type Patch []Operation

// ParsePatch reads what a hook wrote to a *_JSON_PATCH_PATH file: a JSON
// array of operations, a single operation object, or a stream of objects or
// arrays (one per line, as shell hooks append them). A path without a
// leading slash is a dotted path (simpleModule.param2 → /simpleModule/param2),
// the form MODULES.md shows. source names the file in errors.
func ParsePatch(source string, data []byte) (Patch, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var out Patch
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: not a JSON patch: %w", source, err)
		}
		raw = bytes.TrimSpace(raw)
		var ops []Operation
		if len(raw) > 0 && raw[0] == '[' {
			if err := json.Unmarshal(raw, &ops); err != nil {
				return nil, fmt.Errorf("%s: not a JSON patch: %w", source, err)
			}
		} else {
			var op Operation
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, fmt.Errorf("%s: not a JSON patch operation: %w", source, err)
			}
			ops = []Operation{op}
		}
		out = append(out, ops...)
	}
	for i := range out {
		op := &out[i]
		switch op.Op {
		case "add", "remove", "replace", "move", "copy", "test":
		default:
			return nil, fmt.Errorf("%s: operation %d: unknown op %q", source, i+1, op.Op)
		}
		op.Path = normalizePath(op.Path)
		if op.From != "" {
			op.From = normalizePath(op.From)
		}
		if op.Path == "" || (op.From == "" && (op.Op == "move" || op.Op == "copy")) {
			return nil, fmt.Errorf("%s: operation %d (%s): path and, for move/copy, from are required", source, i+1, op.Op)
		}
	}
	return out, nil
}

func normalizePath(p string) string {
	if p == "" || strings.HasPrefix(p, "/") {
		return p
	}
	parts := strings.Split(p, ".")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
	}
	return "/" + strings.Join(parts, "/")
}

// topKey is the first segment of a JSON pointer.
func topKey(p string) string {
	s := strings.TrimPrefix(p, "/")
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s = s[:i]
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// ScopeError is a patch that touches a section its hook may not change.
type ScopeError struct {
	Hook, Path, Reason string
}

func (e *ScopeError) Error() string {
	return fmt.Sprintf("hook %s: patch path %q: %s", e.Hook, e.Path, e.Reason)
}

// checkScope enforces VALUES.md: a module hook changes only its module's
// section; a global hook changes the global section and *Enabled flags.
func (p Patch) checkScope(hook, moduleKey string) error {
	for _, op := range p {
		for _, path := range []string{op.Path, op.From} {
			if path == "" {
				continue
			}
			k := topKey(path)
			if moduleKey != "" {
				if k != moduleKey {
					return &ScopeError{Hook: hook, Path: path, Reason: fmt.Sprintf("a hook of module %q may change only /%s", ModuleName(moduleKey), moduleKey)}
				}
				continue
			}
			if k != GlobalKey && !(strings.HasSuffix(k, EnabledSuffix) && len(k) > len(EnabledSuffix)) {
				return &ScopeError{Hook: hook, Path: path, Reason: "a global hook may change only /global and *Enabled flags"}
			}
		}
	}
	return nil
}

// apply runs the patch on a document. A remove of a path that is already
// gone is not an error, so a stored patch re-applies after a config change.
func (p Patch) apply(doc map[string]any) (map[string]any, error) {
	if len(p) == 0 {
		return doc, nil
	}
	j, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	ops, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	jp, err := jsonpatch.DecodePatch(ops)
	if err != nil {
		return nil, err
	}
	opts := jsonpatch.NewApplyOptions()
	opts.AllowMissingPathOnRemove = true
	opts.EnsurePathExistsOnAdd = true
	out, err := jp.ApplyWithOptions(j, opts)
	if err != nil {
		return nil, err
	}
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, err
	}
	return res, nil
}

// compact drops earlier operations that a later add/replace/remove of the
// same or a parent object path overwrites, so a hook that patches the same
// keys on every run does not grow the stored patch without bound. Paths with
// array indexes are kept as they are, since their meaning depends on order.
func compact(p Patch) Patch {
	out := make(Patch, 0, len(p))
	for _, op := range p {
		if overwrites(op) {
			kept := out[:0]
			for _, prev := range out {
				if overwrites(prev) && (prev.Path == op.Path || strings.HasPrefix(prev.Path, op.Path+"/")) {
					continue
				}
				kept = append(kept, prev)
			}
			out = kept
		}
		out = append(out, op)
	}
	return out
}

func overwrites(op Operation) bool {
	if op.Op != "add" && op.Op != "replace" && op.Op != "remove" {
		return false
	}
	for _, seg := range strings.Split(op.Path, "/")[1:] {
		if seg == "-" {
			return false
		}
		if _, err := strconv.Atoi(seg); err == nil {
			return false
		}
	}
	return true
}
