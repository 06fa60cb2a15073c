package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/addonops/addon-operator/secretfile"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/decrypt"
	"go.yaml.in/yaml/v3"
)

// randomDoc writes a random YAML mapping: nested maps and lists of
// strings, ints, floats, booleans, nulls and empty strings, with keys
// that the rules below select.
func randomDoc(r *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	n := 1 + r.IntN(5)
	for i := 0; i < n; i++ {
		key := []string{"a", "password", "token", "name_unencrypted", "x", "list"}[r.IntN(6)] + fmt.Sprint(i)
		m[key] = randomValue(r, depth)
	}
	return m
}

func randomValue(r *rand.Rand, depth int) any {
	switch k := r.IntN(9); {
	case k == 0 && depth < 3:
		return randomDoc(r, depth+1)
	case k == 1 && depth < 3:
		return []any{randomValue(r, depth+1), randomValue(r, depth+1)}
	case k == 2:
		return r.IntN(1000) - 500
	case k == 3:
		return r.Float64() * 100
	case k == 4:
		return r.IntN(2) == 0
	case k == 5:
		return nil
	case k == 6:
		return ""
	default:
		return fmt.Sprintf("v%d: 'q' \"d\" é", r.IntN(1000))
	}
}

// TestCompatibility encrypts random documents with the sops library under
// each rule and checks that secretfile decrypts them to what sops itself
// decrypts, and that a flipped byte in any value is refused.
func TestCompatibility(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(keyFile, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOPS_AGE_KEY_FILE", keyFile)
	kr, err := secretfile.NewKeyring(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	rules := []sops.Metadata{
		{},
		{EncryptedRegex: "^(password|token)"},
		{UnencryptedRegex: "^x"},
		{EncryptedSuffix: "1"},
		{EncryptedRegex: "^password", MACOnlyEncrypted: true},
	}
	t.Setenv("GNUPGHOME", "")
	pgpKey, err := PGPMasterKey("../keys/" + pgpKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	pgpRing, err := secretfile.NewKeyring("../keys/" + pgpKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		plain, err := yaml.Marshal(randomDoc(r, 0))
		if err != nil {
			t.Fatal(err)
		}
		name := "f.yaml"
		format := formats.Yaml
		if i%2 == 1 {
			name, format = "f.json", formats.Json
			var v any
			_ = yaml.Unmarshal(plain, &v)
			plain = []byte(jsonOf(t, v))
		}
		rule := rules[i%len(rules)]
		if i%10 == 3 {
			// PGP alone: sops's local key service would need a GnuPG
			// secret ring to decrypt, so the plaintext is the reference.
			enc, err := Encrypt(name, plain, nil, rule, pgpKey)
			if err != nil {
				t.Fatalf("%d: sops encrypt (pgp): %v", i, err)
			}
			got, err := pgpRing.Decrypt(context.Background(), name, enc)
			if err != nil {
				t.Fatalf("%d: secretfile (pgp): %v", i, err)
			}
			var g, w any
			_ = yaml.Unmarshal(got, &g)
			_ = yaml.Unmarshal(plain, &w)
			if fmt.Sprint(g) != fmt.Sprint(w) {
				t.Fatalf("%d: pgp: got %v want %v", i, g, w)
			}
			continue
		}
		enc, err := Encrypt(name, plain, []string{id.Recipient().String()}, rule)
		if err != nil {
			t.Fatalf("%d: sops encrypt: %v", i, err)
		}
		want, err := decrypt.DataWithFormat(enc, format)
		if err != nil {
			t.Fatalf("%d: sops decrypt: %v", i, err)
		}
		got, err := kr.Decrypt(context.Background(), name, enc)
		if err != nil {
			t.Fatalf("%d: secretfile: %v\n%s", i, err, enc)
		}
		var g, w any
		if err := yaml.Unmarshal(got, &g); err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(g) != fmt.Sprint(w) || !reflect.DeepEqual(reflect.TypeOf(g), reflect.TypeOf(w)) {
			t.Fatalf("%d: secretfile and sops differ\n got %v\nwant %v", i, g, w)
		}
		if j := strings.Index(string(enc), "data:"); j > 0 {
			bad := []byte(string(enc))
			bad[j+5] ^= 1
			if _, err := kr.Decrypt(context.Background(), name, bad); err == nil {
				t.Fatalf("%d: a flipped byte was not refused", i)
			}
		}
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	out, err := jsonMarshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
