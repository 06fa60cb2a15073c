package values

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

// Operation is one RFC 6902 operation.
type Operation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from,omitempty"`
	Value any    `json:"value,omitempty"`
	// hook wrote the operation; the Store sets it on stored patches so that
	// a dropped operation can name its hook.
	hook string
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
// leading slash is a dotted path (simpleModule.param2 → /simpleModule/param2;
// docs/operator.md, "Values"). source names the file in errors.
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

// checkScope enforces the scope of a hook's patch (docs/operator.md,
// "Values"): a module hook changes only its module's section; a global hook
// changes the global section and *Enabled flags.
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

// apply runs the patch on a document and fails on the first operation that
// does not apply. A remove of a path that is already gone is a no-op, and an
// add creates missing parents: the semantics hooks have always had.
func (p Patch) apply(doc map[string]any) (map[string]any, error) {
	return p.run(doc, func(int, error) bool { return false })
}

// run applies the operations one at a time, each to the JSON the previous
// one wrote. json-patch treats a null that an operation of the same patch
// wrote otherwise than one it read from JSON, and a stored patch joins the
// operations of several hooks, each checked on what the ones before wrote:
// one at a time is the only order in which they all mean the same. When an
// operation does not apply, skip says whether to go on without it.
func (p Patch) run(doc map[string]any, skip func(i int, err error) bool) (map[string]any, error) {
	if len(p) == 0 {
		return doc, nil
	}
	j, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	for i, op := range p {
		next, err := applyOne(j, op)
		if err != nil {
			if !skip(i, err) {
				return nil, err
			}
			continue
		}
		j = next
	}
	var res map[string]any
	if err := json.Unmarshal(j, &res); err != nil {
		return nil, err
	}
	return res, nil
}

// applyOne applies an operation to a JSON document, which must stay an
// object: sections and flags are its keys.
func applyOne(doc []byte, op Operation) (_ []byte, err error) {
	// json-patch v5.9.11 dereferences nil on some nulls (a test comparing
	// lists that hold null); the run is on a private copy, so such an
	// operation simply does not apply
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("json-patch: %v", r)
		}
	}()
	raw, err := json.Marshal(Patch{op})
	if err != nil {
		return nil, err
	}
	jp, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		return nil, err
	}
	opts := jsonpatch.NewApplyOptions()
	opts.AllowMissingPathOnRemove = true
	opts.EnsurePathExistsOnAdd = true
	out, err := jp.ApplyWithOptions(doc, opts)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(out, []byte("{")) {
		return nil, errors.New("the document must stay an object")
	}
	return out, nil
}

// DroppedOp is an operation of a stored temporary patch that no longer
// applies to its section's values, because a ConfigMap edit or a new tree
// removed what it reads or writes, and was discarded. It leaves out the
// operation's value, which may be a secret a hook generated.
type DroppedOp struct {
	Section string // "global" or a module key
	Hook    string // the hook that wrote the operation; empty when unknown
	Op      string
	Path    string
	From    string // for move and copy
	Reason  string
}

func (d DroppedOp) String() string {
	var b strings.Builder
	b.WriteString(d.Section + ": ")
	if d.Hook != "" {
		b.WriteString("hook " + d.Hook + ": ")
	}
	b.WriteString(d.Op)
	if d.From != "" {
		b.WriteString(" from " + d.From + " to")
	}
	b.WriteString(" " + d.Path + ": " + d.Reason)
	return b.String()
}

func dropped(section string, op Operation, reason error) DroppedOp {
	return DroppedOp{Section: section, Hook: op.hook, Op: op.Op, Path: op.Path, From: op.From, Reason: reason.Error()}
}

// replay re-applies a stored patch of a section on fresh values. Unlike
// apply it cannot fail: an operation that no longer applies is left out
// and reported, and the ones after it apply to what the others made, so a
// stale operation never wedges the section's reads.
func (p Patch) replay(section string, doc map[string]any) (map[string]any, Patch, []DroppedOp) {
	stale := map[int]error{}
	out, err := p.run(doc, func(i int, err error) bool {
		stale[i] = err
		return true
	})
	if err != nil {
		// run fails only on a document that is not JSON, which values
		// never are; the section then keeps its config values
		return doc, nil, dropAll(section, p, err)
	}
	kept := make(Patch, 0, len(p))
	var drops []DroppedOp
	for i, op := range p {
		if err, ok := stale[i]; ok {
			drops = append(drops, dropped(section, op, err))
		} else {
			kept = append(kept, op)
		}
	}
	return out, kept, drops
}

// by sets the hook that wrote each operation.
func (p Patch) by(hook string) Patch {
	out := make(Patch, len(p))
	for i, op := range p {
		op.hook = hook
		out[i] = op
	}
	return out
}
