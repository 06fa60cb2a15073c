package clusterconfig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/addonops/addon-operator/secretfile"
)

// The ConfigMap's keys (docs/operator.md, "Values", "Maintenance mode",
// "Drift").
const (
	globalKey         = "global"
	enabledSuffix     = "Enabled"
	maintenanceSuffix = "Maintenance"
	driftSuffix       = "Drift"
)

// maxNodes bounds alias expansion in one file, maxDepth nesting.
const (
	maxNodes = 1 << 20
	maxDepth = 1000
)

// walkBudget bounds toValue: nodes left to expand, and the anchors being
// expanded (an alias into its own anchor is a cycle).
type walkBudget struct {
	nodes  int
	depth  int
	inside map[*yaml.Node]bool
}

var (
	valuesKeyRe  = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)
	moduleNameRe = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)+$`)
)

// entry is one top-level key of a file.
type entry struct {
	key   string
	value any // nil: remove the key
	line  int
}

// fileDoc is one file's entries and encrypted paths, and its operator
// section (OperatorKey) when it has one.
type fileDoc struct {
	entries     []entry
	encrypted   []secretfile.Path
	operator    any
	operatorSet bool
}

// decode reads one layer file: decrypted (or previewed) when it is
// SOPS-encrypted, then checked against the ConfigMap's shape.
func (m *merger) decode(ctx context.Context, file string, data []byte) (*fileDoc, error) {
	out := &fileDoc{}
	var root *yaml.Node
	if secretfile.IsEncrypted(data) {
		var p *secretfile.Plain
		var err error
		switch {
		case m.s.Keyring != nil:
			p, err = m.s.Keyring.Open(ctx, file, data)
		case m.s.Preview:
			p, err = secretfile.Preview(file, data)
		default:
			rec, rerr := secretfile.Recipients(file, data)
			if rerr != nil {
				return nil, &Error{File: file, Msg: "SOPS-encrypted", Err: rerr}
			}
			return nil, errorf(file, "", 0, "SOPS-encrypted for %s, and the operator has no decryption key", strings.Join(rec, ", "))
		}
		if err != nil {
			return nil, &Error{File: file, Msg: "SOPS", Err: err}
		}
		root, out.encrypted = p.Root, p.Encrypted
	} else {
		var doc yaml.Node
		dec := yaml.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, yamlErr(file, err)
		}
		var extra yaml.Node
		if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
			return nil, errorf(file, "", extra.Line, "several YAML documents, want one mapping")
		}
		root = doc.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return out, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, errorf(file, "", root.Line, "not a mapping of ConfigMap keys (global, module sections, <module>Enabled flags), got %s", kind(root))
	}
	budget := &walkBudget{nodes: maxNodes, inside: map[*yaml.Node]bool{}}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		key := k.Value
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			return nil, errorf(file, key, k.Line, "a key must be a string")
		}
		if seen[key] {
			return nil, errorf(file, key, k.Line, "the key is set twice")
		}
		seen[key] = true
		val, err := toValue(v, budget)
		if err != nil {
			return nil, errorf(file, key, v.Line, "%v", err)
		}
		if val == secretfile.Placeholder && isSetting(key) {
			return nil, errorf(file, key, k.Line, "encrypted, and a preview without a key cannot read a flag or mode: keep <module>Enabled, Maintenance and Drift keys out of encryption (sops --encrypted-regex) or preview with a key")
		}
		if key == OperatorKey {
			if err := m.checkOperator(val); err != nil {
				return nil, errorf(file, key, k.Line, "%v", err)
			}
			out.operator, out.operatorSet = val, true
			continue
		}
		if err := m.checkKey(key, val); err != nil {
			return nil, errorf(file, key, k.Line, "%v", err)
		}
		out.entries = append(out.entries, entry{key: key, value: val, line: k.Line})
	}
	return out, nil
}

// checkKey checks one top-level key and its value against the ConfigMap's
// shape (values.Sections.parse, lifecycle's maintenance and drift keys).
func (m *merger) checkKey(key string, v any) error {
	if key == globalKey {
		if _, ok := v.(map[string]any); !ok && v != nil {
			return fmt.Errorf("want a mapping, got %s", kindOf(v))
		}
		return nil
	}
	if !valuesKeyRe.MatchString(key) {
		if moduleNameRe.MatchString(key) {
			return fmt.Errorf("a module's section is under its values key %s, not its name", camel(key))
		}
		return fmt.Errorf("not a ConfigMap key: want global, a module's values key (camelCase), or one with Enabled, Maintenance or Drift after it")
	}
	if m.modules != nil && m.modules[key] {
		return nil
	}
	if mod, ok := strings.CutSuffix(key, enabledSuffix); ok && mod != "" {
		if err := m.known(mod); err != nil {
			return err
		}
		if _, ok := v.(bool); !ok && v != nil {
			return fmt.Errorf("want true or false, got %s %s", kindOf(v), show(v))
		}
		return nil
	}
	if mod, ok := strings.CutSuffix(key, maintenanceSuffix); ok && mod != "" {
		if err := m.known(mod); err != nil {
			return err
		}
		if s, _ := v.(string); v != nil && s != "NoResourceReconciliation" && s != "Managed" {
			return fmt.Errorf("want NoResourceReconciliation or Managed, got %s", show(v))
		}
		return nil
	}
	if mod, ok := strings.CutSuffix(key, driftSuffix); ok && mod != "" {
		if err := m.known(mod); err != nil {
			return err
		}
		if s, _ := v.(string); v != nil && s != "warn" && s != "correct" {
			return fmt.Errorf("want warn or correct, got %s", show(v))
		}
		return nil
	}
	return m.known(key)
}

// isSetting: a key whose value the operator reads as a flag or a mode.
func isSetting(key string) bool {
	for _, suf := range []string{enabledSuffix, maintenanceSuffix, driftSuffix} {
		if strings.HasSuffix(key, suf) && len(key) > len(suf) {
			return true
		}
	}
	return false
}

func (m *merger) known(mod string) error {
	if m.modules != nil && !m.modules[mod] {
		return fmt.Errorf("the tree has no module with values key %s", mod)
	}
	return nil
}

// toValue converts a node as values.parseSection reads ConfigMap text
// (YAML through JSON): maps with string keys, lists, strings, numbers,
// booleans and null; timestamps and binary stay text.
func toValue(n *yaml.Node, budget *walkBudget) (any, error) {
	budget.nodes--
	if budget.nodes < 0 {
		return nil, fmt.Errorf("more than %d values (aliases expanded)", maxNodes)
	}
	budget.depth++
	defer func() { budget.depth-- }()
	if budget.depth > maxDepth {
		return nil, fmt.Errorf("line %d: nested more than %d deep", n.Line, maxDepth)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if budget.inside[n.Alias] {
			return nil, fmt.Errorf("line %d: the alias refers to itself", n.Line)
		}
		budget.inside[n.Alias] = true
		defer delete(budget.inside, n.Alias)
		return toValue(n.Alias, budget)
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				return nil, fmt.Errorf("line %d: merge keys (<<) are not read; write the keys out", k.Line)
			}
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a mapping key must be a scalar", k.Line)
			}
			v, err := toValue(n.Content[i+1], budget)
			if err != nil {
				return nil, err
			}
			out[k.Value] = v
		}
		return out, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := toValue(c, budget)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil, nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, fmt.Errorf("line %d: %v", n.Line, err)
			}
			return b, nil
		case "!!int":
			if i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64); err == nil {
				return i, nil
			}
			fallthrough
		case "!!float":
			var f float64
			if err := n.Decode(&f); err != nil {
				return nil, fmt.Errorf("line %d: %v", n.Line, err)
			}
			return f, nil
		default:
			return n.Value, nil
		}
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
}

// yamlErr turns the parser's "yaml: line N: msg" into a line.
func yamlErr(file string, err error) error {
	msg := err.Error()
	var line int
	if rest, ok := strings.CutPrefix(msg, "yaml: line "); ok {
		if i := strings.Index(rest, ":"); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				line, msg = n, strings.TrimSpace(rest[i+1:])
			}
		}
	}
	return errorf(file, "", line, "invalid YAML: %s", msg)
}

func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return "a scalar"
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	}
	return "a number"
}

func show(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// camel is a module name's values key (cert-manager → certManager).
func camel(name string) string {
	parts := strings.Split(name, "-")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}
