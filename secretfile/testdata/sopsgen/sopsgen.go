// Command sopsgen encrypts the secretfile fixtures with the sops library
// itself (the path the sops CLI takes: tree encrypt, then the MAC), so
// the package's tests decrypt files SOPS wrote, not look-alikes. It is a
// module of its own so that the operator's module never requires sops and
// its cloud SDKs. Run from this directory:
//
//	go run . -dir ..
//
// It keeps the committed test-only keys (../keys) and rewrites the *.enc.*
// fixtures from their *.plain.* sources.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"filippo.io/age"
	"github.com/ProtonMail/go-crypto/openpgp"
	pgparmor "github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/cmd/sops/common"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keys"
	"github.com/getsops/sops/v3/keyservice"
	"github.com/getsops/sops/v3/pgp"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
	"github.com/getsops/sops/v3/version"
)

// Fixture is one file to encrypt: its plaintext source, the keys it is
// encrypted for (by file name in keys/) and its metadata rules.
type Fixture struct {
	Plain, Out string
	Keys       []string // age key files
	PGP        bool     // also for the test-only PGP key
	Rules      sops.Metadata
}

// Fixtures are the committed encrypted files.
var Fixtures = []Fixture{
	{Plain: "config.plain.yaml", Out: "config.enc.yaml", Keys: []string{"test-only-age-key-a.txt"}},
	{Plain: "config.plain.json", Out: "config.enc.json", Keys: []string{"test-only-age-key-a.txt"}},
	{Plain: "config.plain.yaml", Out: "regex.enc.yaml", Keys: []string{"test-only-age-key-a.txt"}, Rules: sops.Metadata{EncryptedRegex: "^(password|token|apiKey)$"}},
	{Plain: "config.plain.yaml", Out: "maconly.enc.yaml", Keys: []string{"test-only-age-key-a.txt"}, Rules: sops.Metadata{EncryptedRegex: "^(password|token|apiKey)$", MACOnlyEncrypted: true}},
	{Plain: "config.plain.yaml", Out: "pgp.enc.yaml", PGP: true},
	{Plain: "config.plain.yaml", Out: "two.enc.yaml", Keys: []string{"test-only-age-key-a.txt", "test-only-age-key-b.txt"}},
	{Plain: "bench100.plain.yaml", Out: "bench100.enc.yaml", Keys: []string{"test-only-age-key-a.txt"}},
	// cmd's BenchmarkConfigInGit: gen-modules.sh 100's settings, encrypted.
	{Plain: "../../cmd/addon-operator/testdata/configbench/secrets.plain.yaml", Out: "../../cmd/addon-operator/testdata/configbench/secrets.yaml", Keys: []string{"test-only-age-key-a.txt"}},
	// clusterconfig's fleet: one cluster's secrets.
	{Plain: "fleet-secrets.plain.yaml", Out: "../../clusterconfig/testdata/fleet/clusters/prod-eu/secrets.yaml", Keys: []string{"test-only-age-key-a.txt"}},
	// loader's encrypted values.yaml files: a module's, a common one, and
	// a common one whose flag is encrypted too (a keyless preview refuses it).
	{Plain: "loader-module-values.plain.yaml", Out: "../../loader/testdata/secrets/module-values.enc.yaml", Keys: []string{"test-only-age-key-a.txt"}, Rules: sops.Metadata{EncryptedRegex: "^(token|password)$"}},
	{Plain: "loader-common-values.plain.yaml", Out: "../../loader/testdata/secrets/common-values.enc.yaml", Keys: []string{"test-only-age-key-a.txt"}, Rules: sops.Metadata{EncryptedRegex: "^apiKey$"}},
	{Plain: "loader-common-values.plain.yaml", Out: "../../loader/testdata/secrets/common-flag.enc.yaml", Keys: []string{"test-only-age-key-a.txt"}},
	// examples/: the dev cluster's secrets, for make run's test-only key.
	{Plain: "examples-dev-secrets.plain.yaml", Out: "../../examples/clusters/dev/secrets.yaml", Keys: []string{examplesKey}, Rules: sops.Metadata{EncryptedRegex: "^apiToken$"}},
}

// examplesKey is examples/'s test-only key, relative to keys/.
const examplesKey = "../../../examples/keys/test-only-age-key.txt"

func main() {
	dir := flag.String("dir", "..", "secretfile's testdata directory")
	only := flag.String("only", "", "rewrite only the fixtures whose output path contains this (default: all)")
	keygen := flag.String("keygen", "", "write a new age identity to this file (which must not exist) and print its public key; nothing else")
	encrypt := flag.String("encrypt", "", "print this plaintext YAML file encrypted by sops for the identity in -for; nothing else")
	forKey := flag.String("for", "", "with -encrypt: an age key file whose first identity's public key is the recipient")
	flag.Parse()
	// tools for tests that make their keys and files at run time
	// (cmd/addon-operator's TestConfigInGit)
	switch {
	case *keygen != "":
		if _, err := os.Stat(*keygen); err == nil {
			log.Fatalf("%s exists", *keygen)
		}
		if err := ensureKey(*keygen); err != nil {
			log.Fatal(err)
		}
		r, err := Recipient(*keygen)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(r)
		return
	case *encrypt != "":
		plain, err := os.ReadFile(*encrypt)
		if err != nil {
			log.Fatal(err)
		}
		r, err := Recipient(*forKey)
		if err != nil {
			log.Fatal(err)
		}
		out, err := Encrypt(*encrypt, plain, []string{r}, sops.Metadata{})
		if err != nil {
			log.Fatal(err)
		}
		os.Stdout.Write(out)
		return
	}
	for _, k := range []string{"test-only-age-key-a.txt", "test-only-age-key-b.txt", examplesKey} {

		if err := ensureKey(filepath.Join(*dir, "keys", k)); err != nil {
			log.Fatal(err)
		}
	}
	if err := ensurePGPKey(filepath.Join(*dir, "keys", pgpKeyFile)); err != nil {
		log.Fatal(err)
	}
	if err := bench100(filepath.Join(*dir, "bench100.plain.yaml")); err != nil {
		log.Fatal(err)
	}
	for _, f := range Fixtures {
		if !strings.Contains(f.Out, *only) {
			continue
		}
		plain, err := os.ReadFile(filepath.Join(*dir, f.Plain))
		if err != nil {
			log.Fatal(err)
		}
		var recipients []string
		for _, k := range f.Keys {
			r, err := Recipient(filepath.Join(*dir, "keys", k))
			if err != nil {
				log.Fatal(err)
			}
			recipients = append(recipients, r)
		}
		var pgpKeys []*pgp.MasterKey
		if f.PGP {
			k, err := PGPMasterKey(filepath.Join(*dir, "keys", pgpKeyFile))
			if err != nil {
				log.Fatal(err)
			}
			pgpKeys = append(pgpKeys, k)
		}
		out, err := Encrypt(f.Plain, plain, recipients, f.Rules, pgpKeys...)
		if err != nil {
			log.Fatalf("%s: %v", f.Out, err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(*dir, f.Out)), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*dir, f.Out), out, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// ensureKey writes a new age identity to file unless it exists, in
// age-keygen's format.
func ensureKey(file string) error {
	if _, err := os.Stat(file); err == nil {
		return nil
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	text := fmt.Sprintf("# TEST ONLY: this key is public in the repository; never use it for real secrets.\n# public key: %s\n%s\n", id.Recipient(), id)
	return os.WriteFile(file, []byte(text), 0o644)
}

// Recipient reads the public key of a key file's first identity.
func Recipient(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	ids, err := age.ParseIdentities(bytes.NewReader(b))
	if err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	return ids[0].(*age.X25519Identity).Recipient().String(), nil
}

// Encrypt encrypts plaintext for age recipients as `sops encrypt` does.
func Encrypt(name string, plain []byte, recipients []string, rules sops.Metadata, pgpKeys ...*pgp.MasterKey) ([]byte, error) {
	var store sops.Store = sopsyaml.NewStore(&config.YAMLStoreConfig{})
	if strings.HasSuffix(name, ".json") {
		store = sopsjson.NewStore(&config.JSONStoreConfig{})
	}
	branches, err := store.LoadPlainFile(plain)
	if err != nil {
		return nil, err
	}
	var group sops.KeyGroup
	for _, r := range recipients {
		k, err := sopsage.MasterKeyFromRecipient(r)
		if err != nil {
			return nil, err
		}
		group = append(group, keys.MasterKey(k))
	}
	for _, k := range pgpKeys {
		group = append(group, k)
	}
	md := rules
	md.KeyGroups = []sops.KeyGroup{group}
	md.Version = version.Version
	if md.EncryptedRegex == "" && md.UnencryptedRegex == "" && md.EncryptedSuffix == "" && md.UnencryptedSuffix == "" {
		md.UnencryptedSuffix = sops.DefaultUnencryptedSuffix
	}
	tree := sops.Tree{Branches: branches, Metadata: md, FilePath: name}
	dataKey, errs := tree.GenerateDataKeyWithKeyServices([]keyservice.KeyServiceClient{keyservice.NewLocalClient()})
	if len(errs) > 0 {
		return nil, fmt.Errorf("data key: %v", errs)
	}
	if err := common.EncryptTree(common.EncryptTreeOpts{DataKey: dataKey, Tree: &tree, Cipher: aes.NewCipher()}); err != nil {
		return nil, err
	}
	return store.EmitEncryptedFile(tree)
}

// bench100 writes a 100-module config: a global section and, per module,
// a flag and a section with a few encrypted credentials.
func bench100(file string) error {
	var b strings.Builder
	b.WriteString("global:\n  clusterName: bench\n  domain: example.com\n")
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&b, "module%03dEnabled: true\n", i)
		fmt.Fprintf(&b, "module%03d:\n  replicas: %d\n  image_unencrypted: registry.example.com/m%03d:v1\n  password: pw-%03d-secret\n  token: tok-%03d\n  resources:\n    cpu: 100m\n    memory: 128Mi\n  hosts:\n  - a%03d.example.com\n  - b%03d.example.com\n", i, i%5+1, i, i, i, i, i)
	}
	return os.WriteFile(file, []byte(b.String()), 0o644)
}

const pgpKeyFile = "test-only-pgp-key.asc"

// ensurePGPKey writes a new PGP key (no passphrase) to file unless it
// exists, armored as gpg --export-secret-keys --armor writes it.
func ensurePGPKey(file string) error {
	if _, err := os.Stat(file); err == nil {
		return nil
	}
	e, err := openpgp.NewEntity("secretfile test only", "public in the repository", "test-only@example.invalid", nil)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	w, err := pgparmor.Encode(&b, openpgp.PrivateKeyType, map[string]string{"Comment": "TEST ONLY: this key is public; never use it for real secrets"})
	if err != nil {
		return err
	}
	if err := e.SerializePrivate(w, nil); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return os.WriteFile(file, append(b.Bytes(), '\n'), 0o644)
}

// PGPMasterKey is sops's PGP master key for the key in file. sops's local
// key service reads public keys from $GNUPGHOME/pubring.gpg (it drops a
// master key's own PubRing), so the public key goes to a new GNUPGHOME.
func PGPMasterKey(file string) (*pgp.MasterKey, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	ents, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	var pub bytes.Buffer
	if err := ents[0].Serialize(&pub); err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "sopsgen-gnupg")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(home, "pubring.gpg"), pub.Bytes(), 0o600); err != nil {
		return nil, err
	}
	os.Setenv("GNUPGHOME", home)
	return pgp.NewMasterKeyFromFingerprint(strings.ToUpper(fmt.Sprintf("%X", ents[0].PrimaryKey.Fingerprint))), nil
}
