package secretfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Limits on input: the whole file, the recipients in its metadata, one
// recipient's data key envelope, one rule's regex.
const (
	MaxFileSize     = 4 << 20
	MaxRecipients   = 64
	MaxEnvelopeSize = 8 << 10
	maxRegex        = 1 << 10
)

// sopsKey is the top-level key of the metadata.
const sopsKey = "sops"

// Format is a file's syntax.
type Format int

const (
	YAML Format = iota
	JSON
)

// formatOf: .json files and documents that start with { are JSON.
func formatOf(file string, data []byte) Format {
	if strings.EqualFold(filepath.Ext(file), ".json") {
		return JSON
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return JSON
	}
	return YAML
}

// document is a parsed file: its mapping (the metadata key removed) and
// its metadata node.
type document struct {
	file   string
	format Format
	root   *yaml.Node // the top-level mapping without sops
	meta   *yaml.Node // the sops mapping, nil for a plain file
}

// parse reads one YAML document or JSON object (JSON is read by the YAML
// parser: it types scalars as SOPS's JSON store does). Anchors, aliases,
// several documents and non-string keys are refused.
func parse(file string, data []byte) (*document, error) {
	if len(data) > MaxFileSize {
		return nil, &Error{File: file, Reason: TooLarge, Detail: fmt.Sprintf("%d bytes, at most %d", len(data), MaxFileSize)}
	}
	d := &document{file: file, format: formatOf(file, data)}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			return d, nil
		}
		return nil, &Error{File: file, Reason: Malformed, Detail: err.Error()}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, &Error{File: file, Reason: Malformed, Line: extra.Line, Detail: "several YAML documents, want one"}
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Reason: Malformed, Line: root.Line, Detail: "the document is not a mapping"}
	}
	if err := check(file, root, nil); err != nil {
		return nil, err
	}
	stripped := &yaml.Node{Kind: yaml.MappingNode, Tag: root.Tag, Line: root.Line, Column: root.Column}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == sopsKey {
			d.meta = root.Content[i+1]
			continue
		}
		stripped.Content = append(stripped.Content, root.Content[i], root.Content[i+1])
	}
	d.root = stripped
	return d, nil
}

// check refuses what SOPS never writes into an encrypted file and what
// this package does not expand: aliases, anchors, non-string or duplicate
// keys.
func check(file string, n *yaml.Node, path Path) error {
	if n.Anchor != "" || n.Kind == yaml.AliasNode {
		return &Error{File: file, Reason: Malformed, Path: path, Line: n.Line, Detail: "anchors and aliases are not read"}
	}
	switch n.Kind {
	case yaml.MappingNode:
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
				return &Error{File: file, Reason: Malformed, Path: path, Line: k.Line, Detail: fmt.Sprintf("key %q is not a string", k.Value)}
			}
			if seen[k.Value] {
				return &Error{File: file, Reason: Malformed, Path: append(path, k.Value), Line: k.Line, Detail: "duplicate key"}
			}
			seen[k.Value] = true
			if err := check(file, n.Content[i+1], append(path, k.Value)); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if err := check(file, c, append(path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// IsEncrypted says whether data is a SOPS file: a mapping whose top-level
// sops key is a mapping with a mac and a lastmodified. A module whose
// values key is "sops" cannot be told from one, as with SOPS itself.
func IsEncrypted(data []byte) bool {
	if len(data) > MaxFileSize || !bytes.Contains(data, []byte(sopsKey)) || !bytes.Contains(data, []byte("lastmodified")) {
		return false // most files: no parse
	}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil || len(doc.Content) == 0 {
		return false
	}
	meta := mapGet(doc.Content[0], sopsKey)
	return meta != nil && mapGet(meta, "mac") != nil && mapGet(meta, "lastmodified") != nil
}

func mapGet(m *yaml.Node, key string) *yaml.Node {
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

// metadata is what decryption needs from the sops mapping.
type metadata struct {
	lastModified string // as SOPS re-formats it for the MAC's additional data
	mac          string
	age          []ageKey
	pgp          []pgpKey
	others       []string // recipients of key sources not read here
	macOnlyEnc   bool
	rule         rule
}

type ageKey struct {
	recipient string
	enc       string
}

type pgpKey struct {
	fp  string
	enc string
}

// rule is the one encryption rule a file may carry (SOPS refuses two).
type rule struct {
	unencSuffix, encSuffix string
	unencRe, encRe         *regexp.Regexp
}

// encrypted says whether SOPS encrypts a leaf at this key path (map keys
// only: SOPS's path leaves list indices out), as sops.Tree does.
func (r rule) encrypted(keys []string) bool {
	enc := true
	if r.unencSuffix != "" {
		for _, k := range keys {
			if strings.HasSuffix(k, r.unencSuffix) {
				enc = false
				break
			}
		}
	}
	if r.encSuffix != "" {
		enc = false
		for _, k := range keys {
			if strings.HasSuffix(k, r.encSuffix) {
				enc = true
				break
			}
		}
	}
	if r.unencRe != nil {
		for _, k := range keys {
			if r.unencRe.MatchString(k) {
				enc = false
				break
			}
		}
	}
	if r.encRe != nil {
		enc = false
		for _, k := range keys {
			if r.encRe.MatchString(k) {
				enc = true
				break
			}
		}
	}
	return enc
}

func (d *document) malformed(n *yaml.Node, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: d.file, Reason: Malformed, Line: line, Detail: fmt.Sprintf(format, args...)}
}

// metadata reads and checks the sops mapping.
func (d *document) metadata() (*metadata, error) {
	m := d.meta
	if m == nil {
		return nil, d.malformed(nil, "no sops metadata: the file is not encrypted")
	}
	if m.Kind != yaml.MappingNode {
		return nil, d.malformed(m, "sops metadata is not a mapping")
	}
	md := &metadata{}
	str := func(key string) (string, error) {
		n := mapGet(m, key)
		if n == nil {
			return "", nil
		}
		if n.Kind != yaml.ScalarNode {
			return "", d.malformed(n, "sops.%s is not a string", key)
		}
		return n.Value, nil
	}
	lm, err := str("lastmodified")
	if err != nil {
		return nil, err
	}
	t, err := time.Parse(time.RFC3339, lm)
	if err != nil {
		return nil, d.malformed(mapGet(m, "lastmodified"), "sops.lastmodified %q is not an RFC 3339 time", lm)
	}
	md.lastModified = t.Format(time.RFC3339)
	if md.mac, err = str("mac"); err != nil {
		return nil, err
	}
	if md.mac == "" {
		return nil, d.malformed(m, "sops.mac is missing")
	}
	if n := mapGet(m, "mac_only_encrypted"); n != nil {
		md.macOnlyEnc = n.Value == "true"
	}
	for _, k := range []string{"encrypted_comment_regex", "unencrypted_comment_regex"} {
		if v, _ := str(k); v != "" {
			return nil, d.malformed(mapGet(m, k), "sops.%s is not supported here; use encrypted_regex or the suffix rules", k)
		}
	}
	rules := 0
	for _, k := range []string{"unencrypted_suffix", "encrypted_suffix", "unencrypted_regex", "encrypted_regex"} {
		v, err := str(k)
		if err != nil {
			return nil, err
		}
		if v == "" {
			continue
		}
		rules++
		if len(v) > maxRegex {
			return nil, d.malformed(mapGet(m, k), "sops.%s is over %d bytes", k, maxRegex)
		}
		switch k {
		case "unencrypted_suffix":
			md.rule.unencSuffix = v
		case "encrypted_suffix":
			md.rule.encSuffix = v
		default:
			re, err := regexp.Compile(v)
			if err != nil {
				return nil, d.malformed(mapGet(m, k), "sops.%s: %v", k, err)
			}
			if k == "unencrypted_regex" {
				md.rule.unencRe = re
			} else {
				md.rule.encRe = re
			}
		}
	}
	if rules > 1 {
		return nil, d.malformed(m, "more than one of the rules unencrypted_suffix, encrypted_suffix, unencrypted_regex, encrypted_regex")
	}
	if rules == 0 {
		md.rule.unencSuffix = "_unencrypted" // SOPS's default
	}
	group := m
	if kg := mapGet(m, "key_groups"); kg != nil && len(kg.Content) > 0 {
		if kg.Kind != yaml.SequenceNode || len(kg.Content) != 1 {
			return nil, d.malformed(kg, "sops.key_groups: only one key group is read here (Shamir secret sharing is not)")
		}
		group = kg.Content[0]
	}
	if err := d.keys(group, md); err != nil {
		return nil, err
	}
	if len(md.age)+len(md.pgp)+len(md.others) == 0 {
		return nil, d.malformed(m, "no keys in the sops metadata")
	}
	return md, nil
}

// keySources are the other key sources SOPS writes, with the field that
// names each key.
var keySources = []struct{ key, name, field string }{
	{"kms", "kms", "arn"},
	{"gcp_kms", "gcp_kms", "resource_id"},
	{"azure_kv", "azure_kv", "vault_url"},
	{"hc_vault", "hc_vault", "vault_address"},
	{"hckms", "hckms", "key_id"},
}

func (d *document) keys(group *yaml.Node, md *metadata) error {
	if group.Kind != yaml.MappingNode {
		return d.malformed(group, "sops key group is not a mapping")
	}
	count := 0
	list := func(key string) ([]*yaml.Node, error) {
		n := mapGet(group, key)
		if n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
			return nil, nil
		}
		if n.Kind != yaml.SequenceNode {
			return nil, d.malformed(n, "sops.%s is not a list", key)
		}
		count += len(n.Content)
		if count > MaxRecipients {
			return nil, d.malformed(n, "more than %d recipients", MaxRecipients)
		}
		return n.Content, nil
	}
	ages, err := list("age")
	if err != nil {
		return err
	}
	for _, a := range ages {
		r, enc := mapGet(a, "recipient"), mapGet(a, "enc")
		if r == nil || enc == nil || r.Kind != yaml.ScalarNode || enc.Kind != yaml.ScalarNode {
			return d.malformed(a, "sops.age entry wants recipient and enc")
		}
		if len(enc.Value) > MaxEnvelopeSize {
			return d.malformed(enc, "sops.age enc is over %d bytes", MaxEnvelopeSize)
		}
		md.age = append(md.age, ageKey{recipient: r.Value, enc: enc.Value})
	}
	pgps, err := list("pgp")
	if err != nil {
		return err
	}
	for _, p := range pgps {
		fp, enc := mapGet(p, "fp"), mapGet(p, "enc")
		if fp == nil || enc == nil || fp.Kind != yaml.ScalarNode || enc.Kind != yaml.ScalarNode {
			return d.malformed(p, "sops.pgp entry wants fp and enc")
		}
		if len(enc.Value) > MaxEnvelopeSize {
			return d.malformed(enc, "sops.pgp enc is over %d bytes", MaxEnvelopeSize)
		}
		md.pgp = append(md.pgp, pgpKey{fp: strings.ToUpper(fp.Value), enc: enc.Value})
	}
	for _, s := range keySources {
		ns, err := list(s.key)
		if err != nil {
			return err
		}
		for _, n := range ns {
			name := "?"
			if v := mapGet(n, s.field); v != nil {
				name = v.Value
			}
			md.others = append(md.others, s.name+":"+name)
		}
	}
	return nil
}

// recipients lists age recipients, then PGP fingerprints, then the others.
func (md *metadata) recipients() []string {
	out := make([]string, 0, len(md.age)+len(md.pgp)+len(md.others))
	for _, a := range md.age {
		out = append(out, a.recipient)
	}
	for _, p := range md.pgp {
		out = append(out, "pgp:"+p.fp)
	}
	return append(out, md.others...)
}
