package secretfile

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"
	"time"

	"filippo.io/age"
	"filippo.io/age/armor"
	"github.com/ProtonMail/go-crypto/openpgp"
	pgparmor "github.com/ProtonMail/go-crypto/openpgp/armor"
	"go.yaml.in/yaml/v3"
)

// Placeholder stands for an encrypted value in a preview without a key.
const Placeholder = "<encrypted>"

// Plain is a decrypted (or previewed) file.
type Plain struct {
	// Data is the plaintext in the file's own format (YAML or JSON),
	// without the sops metadata and without comments.
	Data   []byte
	Format Format
	// Root is Data's top-level mapping as parsed, with the lines of the
	// encrypted file, for callers whose errors name a line.
	Root *yaml.Node
	// Encrypted are the leaves that were encrypted, in document order:
	// what a caller redacts wherever values are shown.
	Encrypted []Path
	// Recipients are the keys the file was encrypted for.
	Recipients []string
}

// macOnlyEncryptedInit starts the MAC of a file with mac_only_encrypted,
// as SOPS does, so that such a MAC never equals the usual one.
var macOnlyEncryptedInit = []byte{0x8a, 0x3f, 0xd2, 0xad, 0x54, 0xce, 0x66, 0x52, 0x7b, 0x10, 0x34, 0xf3, 0xd1, 0x47, 0xbe, 0xb, 0xb, 0x97, 0x5b, 0x3b, 0xf4, 0x4f, 0x72, 0xc6, 0xfd, 0xad, 0xec, 0x81, 0x76, 0xf2, 0x7d, 0x69}

// Decrypt returns the plaintext of a SOPS file in its own format. file
// names the file in errors. A nil Keyring fails with NoKey.
func (k *Keyring) Decrypt(ctx context.Context, file string, data []byte) ([]byte, error) {
	p, err := k.Open(ctx, file, data)
	if err != nil {
		return nil, err
	}
	return p.Data, nil
}

// Open decrypts a SOPS file and says which leaves were encrypted. Every
// error is an *Error.
func (k *Keyring) Open(ctx context.Context, file string, data []byte) (*Plain, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d, err := parse(file, data)
	if err != nil {
		return nil, err
	}
	md, err := d.metadata()
	if err != nil {
		return nil, err
	}
	key, err := k.dataKey(d, md)
	if err != nil {
		return nil, err
	}
	w := &walker{doc: d, md: md, key: key, hash: sha512.New()}
	if md.macOnlyEnc {
		w.hash.Write(macOnlyEncryptedInit)
	}
	if err := w.walk(d.root, nil, nil); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	computed := strings.ToUpper(hex.EncodeToString(w.hash.Sum(nil)))
	stored, err := openValue(md.mac, key, md.lastModified)
	if err != nil {
		return nil, &Error{File: file, Reason: Tampered, Line: mapGet(d.meta, "mac").Line, Detail: "sops.mac does not authenticate: " + err.Error(), Recipients: md.recipients()}
	}
	if s, ok := stored.(string); !ok || s != computed {
		return nil, &Error{File: file, Reason: Tampered, Line: mapGet(d.meta, "mac").Line, Detail: "MAC mismatch: the values are not those SOPS encrypted", Recipients: md.recipients()}
	}
	return d.result(md, w.encrypted)
}

// Preview reads a SOPS file without a key: each encrypted leaf becomes
// Placeholder, the rest keeps its value, so a chart still renders. Nothing
// is authenticated: a preview is not a decryption.
func Preview(file string, data []byte) (*Plain, error) {
	d, err := parse(file, data)
	if err != nil {
		return nil, err
	}
	md, err := d.metadata()
	if err != nil {
		return nil, err
	}
	w := &walker{doc: d, md: md}
	if err := w.walk(d.root, nil, nil); err != nil {
		return nil, err
	}
	return d.result(md, w.encrypted)
}

// Recipients lists the keys a SOPS file was encrypted for.
func Recipients(file string, data []byte) ([]string, error) {
	d, err := parse(file, data)
	if err != nil {
		return nil, err
	}
	md, err := d.metadata()
	if err != nil {
		return nil, err
	}
	return md.recipients(), nil
}

func (d *document) result(md *metadata, enc []Path) (*Plain, error) {
	clearComments(d.root)
	var out []byte
	var err error
	if d.format == JSON {
		var b bytes.Buffer
		err = writeJSON(&b, d.root)
		b.WriteByte('\n')
		out = b.Bytes()
	} else {
		var b bytes.Buffer
		e := yaml.NewEncoder(&b)
		e.SetIndent(2)
		if err = e.Encode(d.root); err == nil {
			err = e.Close()
		}
		out = b.Bytes()
	}
	if err != nil {
		return nil, &Error{File: d.file, Reason: Malformed, Detail: "encode plaintext: " + err.Error()}
	}
	return &Plain{Data: out, Format: d.format, Root: d.root, Encrypted: enc, Recipients: md.recipients()}, nil
}

// dataKey opens the file's data key with the keyring's identities.
func (k *Keyring) dataKey(d *document, md *metadata) ([]byte, error) {
	fail := func(r Reason, pub []string, detail string) error {
		return &Error{File: d.file, Reason: r, Recipients: md.recipients(), Keyring: pub, Detail: detail}
	}
	if k == nil {
		return nil, fail(NoKey, nil, "")
	}
	ks, err := k.load()
	if err != nil {
		return nil, fail(NoKey, nil, err.Error())
	}
	if ks.empty() {
		return nil, fail(NoKey, nil, "")
	}
	if len(md.age)+len(md.pgp) == 0 {
		return nil, fail(WrongKey, ks.public, "the file has no age or PGP recipients")
	}
	identities := make([]age.Identity, len(ks.age))
	for i, id := range ks.age {
		identities[i] = id
	}
	var opened []byte
	var from string
	for _, a := range md.age {
		if len(identities) == 0 {
			break
		}
		r, err := age.Decrypt(armor.NewReader(strings.NewReader(a.enc)), identities...)
		if err != nil {
			continue
		}
		if opened, err = io.ReadAll(io.LimitReader(r, 64)); err == nil {
			from = a.recipient
			break
		}
	}
	for _, p := range md.pgp {
		if opened != nil || len(ks.pgp) == 0 {
			break
		}
		block, err := pgparmor.Decode(strings.NewReader(p.enc))
		if err != nil {
			continue
		}
		msg, err := openpgp.ReadMessage(block.Body, ks.pgp, nil, nil)
		if err != nil {
			continue
		}
		// At most 64 bytes: a hostile message may be compressed.
		if opened, err = io.ReadAll(io.LimitReader(msg.UnverifiedBody, 64)); err == nil {
			from = "pgp:" + p.fp
		}
	}
	if opened == nil {
		return nil, fail(WrongKey, ks.public, "")
	}
	if len(opened) != 32 {
		return nil, &Error{File: d.file, Reason: Malformed, Recipients: md.recipients(), Detail: fmt.Sprintf("the data key for %s is not a 32-byte key", from)}
	}
	return opened, nil
}

// walker visits leaves in document order as sops.Tree does, decrypting
// (key set) or replacing with Placeholder (no key) the encrypted ones and
// hashing the plaintext for the MAC.
type walker struct {
	doc       *document
	md        *metadata
	key       []byte
	hash      hash.Hash
	encrypted []Path
}

func (w *walker) walk(n *yaml.Node, keys []string, path Path) error {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if err := w.walk(n.Content[i+1], append(keys[:len(keys):len(keys)], k), append(path[:len(path):len(path)], k)); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			// SOPS's path (the additional data) leaves list indices out.
			if err := w.walk(c, keys, append(path[:len(path):len(path)], i)); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		return w.leaf(n, keys, path)
	}
	return nil
}

func (w *walker) fail(r Reason, n *yaml.Node, path Path, format string, args ...any) error {
	return &Error{File: w.doc.file, Reason: r, Path: path, Line: n.Line, Detail: fmt.Sprintf(format, args...), Recipients: w.md.recipients()}
}

func (w *walker) leaf(n *yaml.Node, keys []string, path Path) error {
	var v any
	if err := n.Decode(&v); err != nil {
		return w.fail(Malformed, n, path, "%v", err)
	}
	if v == nil {
		return nil // SOPS neither encrypts nor hashes a null
	}
	enc := w.md.rule.encrypted(keys)
	if enc {
		s, ok := v.(string)
		if !ok || (s != "" && !strings.HasPrefix(s, "ENC[")) {
			return w.fail(Tampered, n, path, "the value is not encrypted though the file's rules say it is")
		}
		if s != "" {
			w.encrypted = append(w.encrypted, append(Path(nil), path...))
			if w.key == nil {
				return setNode(n, Placeholder)
			}
			pv, err := openValue(s, w.key, strings.Join(keys, ":")+":")
			if err != nil {
				return w.fail(Tampered, n, path, "%v", err)
			}
			v = pv
			if err := setNode(n, v); err != nil {
				return w.fail(Malformed, n, path, "%v", err)
			}
		}
	}
	if w.hash != nil && (!w.md.macOnlyEnc || enc) {
		b, err := toBytes(v)
		if err != nil {
			return w.fail(Malformed, n, path, "%v", err)
		}
		w.hash.Write(b)
	}
	return nil
}

// setNode replaces a scalar's value, keeping its place (line) in the file.
// Common types are set directly: Node.Encode runs a whole encoder and
// parser per value, most of a decryption's time.
func setNode(n *yaml.Node, v any) error {
	line, col := n.Line, n.Column
	var m yaml.Node
	switch t := v.(type) {
	case []byte:
		m = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: string(t)}
	case string:
		m = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t}
	case int:
		m = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(t)}
	case bool:
		m = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(t)}
	default:
		if err := m.Encode(v); err != nil {
			return err
		}
	}
	*n = m
	n.Line, n.Column = line, col
	return nil
}

// toBytes is SOPS's byte form of a value for the MAC.
func toBytes(v any) ([]byte, error) {
	switch t := v.(type) {
	case string:
		return []byte(t), nil
	case []byte:
		return t, nil
	case int:
		return []byte(strconv.Itoa(t)), nil
	case float64:
		return []byte(strconv.FormatFloat(t, 'f', -1, 64)), nil
	case bool:
		if t {
			return []byte("True"), nil
		}
		return []byte("False"), nil
	case time.Time:
		return t.MarshalText()
	}
	return nil, fmt.Errorf("a value of type %T, which SOPS does not encrypt", v)
}

// splitEnc splits ENC[AES256_GCM,data:…,iv:…,tag:…,type:…] as SOPS's
// greedy pattern does, without a regexp (a third of a decryption's time).
func splitEnc(s string) (m [5]string, ok bool) {
	rest, ok := strings.CutPrefix(s, "ENC[AES256_GCM,data:")
	end := strings.LastIndexByte(rest, ']')
	if !ok || end < 0 {
		return m, false
	}
	rest = rest[:end]
	for i, sep := range []string{",type:", ",tag:", ",iv:"} {
		j := strings.LastIndex(rest, sep)
		if j < 0 {
			return m, false
		}
		m[4-i] = rest[j+len(sep):]
		rest = rest[:j]
	}
	m[1] = rest
	for _, p := range m[1:] {
		if p == "" {
			return m, false
		}
	}
	return m, true
}

// openValue decrypts one ENC[AES256_GCM,…] value with the data key and
// its additional data, typed as the value says.
func openValue(s string, key []byte, aad string) (any, error) {
	m, ok := splitEnc(s)
	if !ok {
		return nil, fmt.Errorf("not an ENC[AES256_GCM,…] value")
	}
	var parts [3][]byte
	for i := range parts {
		b, err := base64.StdEncoding.DecodeString(m[i+1])
		if err != nil {
			return nil, fmt.Errorf("the encrypted value's %s is not base64", [3]string{"data", "iv", "tag"}[i])
		}
		parts[i] = b
	}
	data, iv, tag := parts[0], parts[1], parts[2]
	if len(iv) == 0 || len(iv) > 256 || len(tag) != 16 {
		return nil, fmt.Errorf("the encrypted value's iv or tag has the wrong size")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, len(iv))
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, iv, append(data, tag...), []byte(aad))
	if err != nil {
		return nil, fmt.Errorf("the value does not authenticate (changed, or moved from another key)")
	}
	text := string(plain)
	switch m[4] {
	case "str":
		return text, nil
	case "bytes":
		return plain, nil
	case "int":
		return strconv.Atoi(text)
	case "float":
		return strconv.ParseFloat(text, 64)
	case "bool":
		return strconv.ParseBool(text)
	case "time":
		var t time.Time
		err := t.UnmarshalText(plain)
		return t, err
	}
	return nil, fmt.Errorf("unknown value type %q", m[4])
}

func clearComments(n *yaml.Node) {
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	for _, c := range n.Content {
		clearComments(c)
	}
}

// writeJSON writes a node tree as JSON, keeping the keys' order.
func writeJSON(b *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			b.Write(k)
			b.WriteByte(':')
			if err := writeJSON(b, n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		var v any
		if err := n.Decode(&v); err != nil {
			return err
		}
		j, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(j)
	}
	return nil
}
