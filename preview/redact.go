package preview

import (
	"bytes"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Redacted stands for a Secret's value in a preview's output
// (docs/operator.md, "Previews").
const Redacted = "<redacted>"

// RedactedChanged stands, in diff's "to" side, for a Secret's value that
// differs from the "from" side's: the diff names the key that changed
// without showing either value.
const RedactedChanged = "<redacted (changed)>"

// secretFields are the fields of a Secret whose values are redacted.
var secretFields = []string{"data", "stringData"}

// RedactSecrets replaces the values of every Secret's data and stringData
// in a rendered manifest (YAML documents separated by ---, as Helm writes
// them) with Redacted, keeping the keys; a List's Secrets too. Other
// documents are kept byte for byte; a Secret's document is written again
// from its parse, comments kept.
func RedactSecrets(manifest string) string {
	return redactWith(manifest, nil, nil)
}

// redactPair redacts both sides of a comparison: before as RedactSecrets
// does, after with RedactedChanged for each value that differs from (or is
// not in) the same Secret's before (by namespace and name).
func redactPair(before, after string) (string, string) {
	prior := map[string]map[string]string{}
	b := redactWith(before, func(id string, values map[string]string) { prior[id] = values }, nil)
	return b, redactWith(after, nil, prior)
}

// redactWith walks manifest's documents: each Secret is reported to seen
// (its id and field/key → value) and written redacted; with prior, a
// value that differs from prior's is RedactedChanged.
func redactWith(manifest string, seen func(string, map[string]string), prior map[string]map[string]string) string {
	if !strings.Contains(manifest, "Secret") {
		return manifest // most manifests: no parse
	}
	docs := splitDocs(manifest)
	for i, d := range docs {
		if !strings.Contains(d, "Secret") {
			continue
		}
		var root yaml.Node
		if err := yaml.Unmarshal([]byte(d), &root); err != nil || len(root.Content) == 0 {
			// Helm refuses a manifest that does not parse before this
			// runs; one that still does not is withheld whole
			if strings.Contains(d, "kind: Secret") {
				docs[i] = "# " + Redacted + ": a document that does not parse as YAML\n"
			}
			continue
		}
		if !redactObject(root.Content[0], seen, prior) {
			continue
		}
		var b bytes.Buffer
		e := yaml.NewEncoder(&b)
		e.SetIndent(2)
		if e.Encode(&root) != nil || e.Close() != nil {
			docs[i] = "# " + Redacted + ": a Secret that could not be written again\n"
			continue
		}
		docs[i] = b.String()
	}
	return strings.Join(docs, "---\n")
}

// splitDocs splits a manifest at its --- lines; joined with "---\n" the
// parts give the manifest back.
func splitDocs(manifest string) []string {
	lines := strings.SplitAfter(manifest, "\n")
	var docs []string
	var cur strings.Builder
	for _, l := range lines {
		if strings.TrimRight(l, " \t\r\n") == "---" {
			docs = append(docs, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteString(l)
	}
	return append(docs, cur.String())
}

// redactObject redacts n when it is a Secret, or the Secrets of a List;
// it says whether anything changed.
func redactObject(n *yaml.Node, seen func(string, map[string]string), prior map[string]map[string]string) bool {
	if n.Kind != yaml.MappingNode {
		return false
	}
	kind := scalar(n, "kind")
	if strings.HasSuffix(kind, "List") {
		items := get(n, "items")
		changed := false
		if items != nil && items.Kind == yaml.SequenceNode {
			for _, it := range items.Content {
				changed = redactObject(it, seen, prior) || changed
			}
		}
		return changed
	}
	if kind != "Secret" || !coreGroup(scalar(n, "apiVersion")) {
		return false
	}
	meta := get(n, "metadata")
	id := scalar(meta, "namespace") + "/" + scalar(meta, "name")
	values := map[string]string{}
	changed := false
	for _, f := range secretFields {
		m := get(n, f)
		if m == nil {
			continue
		}
		if m.Kind != yaml.MappingNode {
			*m = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: Redacted}
			changed = true
			continue
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := f+"/"+m.Content[i].Value, m.Content[i+1]
			values[k] = v.Value
			mark := Redacted
			if p, ok := prior[id]; ok {
				if was, ok := p[k]; !ok || was != v.Value {
					mark = RedactedChanged
				}
			}
			*v = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: mark, Line: v.Line}
			changed = true
		}
	}
	if seen != nil {
		seen(id, values)
	}
	return changed
}

// coreGroup: a Secret is the core group's (apiVersion v1).
func coreGroup(apiVersion string) bool { return apiVersion == "v1" || apiVersion == "" }

func get(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func scalar(m *yaml.Node, key string) string {
	if v := get(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}
