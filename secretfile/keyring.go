package secretfile

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"filippo.io/age"
	"github.com/ProtonMail/go-crypto/openpgp"
)

// Limits of key files: a key file (or each file of a key directory) up to
// MaxKeyFileSize, at most MaxKeyFiles files in a directory.
const (
	MaxKeyFileSize = 1 << 20
	MaxKeyFiles    = 256
)

// Keyring holds age identities read from key files and directories. It
// re-reads them before each decryption and re-parses them when their
// content changed, so a rotated key (a rewritten file, a Kubernetes Secret
// volume's new data) takes effect without a restart. It is safe for
// concurrent use. It never prints its keys: String, GoString and LogValue
// name the files and the public keys only.
type Keyring struct {
	paths []string

	mu         sync.Mutex
	sum        [sha256.Size]byte
	identities []*age.X25519Identity
	pgp        openpgp.EntityList
	public     []string // age recipients of identities, then pgp:FINGERPRINT
}

// keys is what a keyring holds at one moment.
type keys struct {
	age    []*age.X25519Identity
	pgp    openpgp.EntityList
	public []string
}

func (k keys) empty() bool { return len(k.age) == 0 && len(k.pgp) == 0 }

// NewKeyring reads the identities in paths, each a file or a directory
// whose files (not dot files, not subdirectories; symlinks followed) are
// read in name order. A file holds age identities (AGE-SECRET-KEY-1…),
// one a line, with # comments and blank lines, as age-keygen writes
// them, or an armored PGP private key block without a passphrase (as
// `gpg --export-secret-keys --armor` writes it). The keyring may be empty at first: decryption then fails with
// NoKey until a key appears.
func NewKeyring(paths ...string) (*Keyring, error) {
	k := &Keyring{paths: append([]string(nil), paths...)}
	if _, err := k.load(); err != nil {
		return nil, err
	}
	return k, nil
}

// String names the key files and the public keys, never the secret ones.
func (k *Keyring) String() string {
	if k == nil {
		return "Keyring(none)"
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return fmt.Sprintf("Keyring(%s: %s)", strings.Join(k.paths, ", "), strings.Join(k.public, ", "))
}

// GoString is String, so %#v does not print the identities.
func (k *Keyring) GoString() string { return k.String() }

// LogValue is String, for log/slog.
func (k *Keyring) LogValue() slog.Value { return slog.StringValue(k.String()) }

// Recipients are the age public keys of the identities the keyring holds
// now, after re-reading its files.
func (k *Keyring) Recipients() ([]string, error) {
	if k == nil {
		return nil, nil
	}
	ks, err := k.load()
	return ks.public, err
}

// load re-reads the key files and re-parses them when their content
// changed: a few small reads per decryption, cheaper than the decryption.
func (k *Keyring) load() (keys, error) {
	files, err := k.files()
	if err != nil {
		return keys{}, err
	}
	h := sha256.New()
	contents := make([][]byte, len(files))
	for i, f := range files {
		b, err := readLimited(f, MaxKeyFileSize)
		if err != nil {
			return keys{}, err
		}
		contents[i] = b
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	k.mu.Lock()
	defer k.mu.Unlock()
	if sum == k.sum && k.identities != nil {
		return keys{age: k.identities, pgp: k.pgp, public: k.public}, nil
	}
	ids := []*age.X25519Identity{}
	var ents openpgp.EntityList
	var pub, pgpPub []string
	for i, f := range files {
		if bytes.Contains(contents[i], []byte(pgpBlock)) {
			got, err := parsePGP(f, contents[i])
			if err != nil {
				return keys{}, err
			}
			for _, e := range got {
				ents = append(ents, e)
				pgpPub = append(pgpPub, "pgp:"+fingerprint(e))
			}
			continue
		}
		got, err := parseIdentities(f, contents[i])
		if err != nil {
			return keys{}, err
		}
		for _, id := range got {
			ids = append(ids, id)
			pub = append(pub, id.Recipient().String())
		}
	}
	pub = append(pub, pgpPub...)
	k.sum, k.identities, k.pgp, k.public = sum, ids, ents, pub
	return keys{age: ids, pgp: ents, public: pub}, nil
}

// files lists the key files the paths name now.
func (k *Keyring) files() ([]string, error) {
	var out []string
	for _, p := range k.paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("key file %s: %w", p, err)
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("key directory %s: %w", p, err)
		}
		var names []string
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue // a Secret volume's ..data and timestamped dirs
			}
			full := filepath.Join(p, e.Name())
			st, err := os.Stat(full)
			if err != nil || !st.Mode().IsRegular() {
				continue
			}
			names = append(names, full)
		}
		sort.Strings(names)
		if len(names) > MaxKeyFiles {
			return nil, fmt.Errorf("key directory %s: %d files, at most %d", p, len(names), MaxKeyFiles)
		}
		out = append(out, names...)
	}
	return out, nil
}

func readLimited(file string, limit int64) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", file, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", file, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("key file %s: over %d bytes", file, limit)
	}
	return b, nil
}

// parseIdentities reads one key file. Its errors name the file and the
// line, never the line's text: it may be a key.
func parseIdentities(file string, b []byte) ([]*age.X25519Identity, error) {
	var out []*age.X25519Identity
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 4096), MaxKeyFileSize)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		id, err := age.ParseX25519Identity(t)
		if err != nil {
			return nil, fmt.Errorf("key file %s line %d: not an age X25519 identity (AGE-SECRET-KEY-1…)", file, line)
		}
		out = append(out, id)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("key file %s: %w", file, err)
	}
	return out, nil
}

const pgpBlock = "-----BEGIN PGP PRIVATE KEY BLOCK-----"

// parsePGP reads an armored PGP private key block; keys behind a
// passphrase are refused (there is nobody to type it).
func parsePGP(file string, b []byte) (openpgp.EntityList, error) {
	ents, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("key file %s: not a readable PGP private key block", file)
	}
	for _, e := range ents {
		if e.PrivateKey == nil {
			return nil, fmt.Errorf("key file %s: PGP key %s has no private key", file, fingerprint(e))
		}
		locked := e.PrivateKey.Encrypted
		for _, sub := range e.Subkeys {
			locked = locked || (sub.PrivateKey != nil && sub.PrivateKey.Encrypted)
		}
		if locked {
			return nil, fmt.Errorf("key file %s: PGP key %s is protected by a passphrase, which is not read", file, fingerprint(e))
		}
	}
	return ents, nil
}

// fingerprint is a PGP key's fingerprint as SOPS writes it (sops.pgp fp).
func fingerprint(e *openpgp.Entity) string {
	return strings.ToUpper(hex.EncodeToString(e.PrimaryKey.Fingerprint))
}
