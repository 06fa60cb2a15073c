package secretfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/ProtonMail/go-crypto/openpgp"
	pgparmor "github.com/ProtonMail/go-crypto/openpgp/armor"
	"go.yaml.in/yaml/v3"
)

// The fixtures in testdata were encrypted by the sops library
// (testdata/sopsgen) for the committed test-only keys in testdata/keys.
const (
	keyA = "testdata/keys/test-only-age-key-a.txt"
	keyB = "testdata/keys/test-only-age-key-b.txt"
	// keyPGP is an armored PGP private key without a passphrase.
	keyPGP = "testdata/keys/test-only-pgp-key.asc"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func keyring(t testing.TB, paths ...string) *Keyring {
	t.Helper()
	k, err := NewKeyring(paths...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// semantic parses YAML or JSON into plain Go values, times as text.
func semantic(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return v
}

func recipientOf(t testing.TB, file string) string {
	t.Helper()
	ids, err := age.ParseIdentities(bytes.NewReader(fixture(t, strings.TrimPrefix(file, "testdata/"))))
	if err != nil {
		t.Fatal(err)
	}
	return ids[0].(*age.X25519Identity).Recipient().String()
}

// TestFixturesDecrypt decrypts every fixture sops wrote and compares it
// with its plaintext source: it validates the committed fixtures, and
// that the MAC and typing match SOPS's.
func TestFixturesDecrypt(t *testing.T) {
	for _, tc := range []struct {
		enc, plain, key string
		encrypted       []string
	}{
		{"config.enc.yaml", "config.plain.yaml", keyA, []string{
			"global.clusterName", "global.domain", "global.apiKey", "global.replicas", "global.ratio", "global.debug",
			"certManager.email", "certManager.password", "certManager.solvers[0].dns", "certManager.solvers[0].token",
			"certManager.solvers[1].http", "certManager.ports[0]", "certManager.ports[1]", "certManagerEnabled",
			"ingressNginx.controller.token", "ingressNginx.controller.config.big", "ingressNginx.controller.config.when"}},
		{"config.enc.json", "config.plain.json", keyA, []string{
			"global.clusterName", "global.apiKey", "global.replicas", "global.ratio", "global.debug",
			"certManager.password", "certManager.solvers[0].dns", "certManager.solvers[0].token", "certManager.solvers[1].http",
			"certManager.ports[0]", "certManager.ports[1]", "certManagerEnabled", "unicode"}},
		{"regex.enc.yaml", "config.plain.yaml", keyA, []string{"global.apiKey", "certManager.password", "certManager.solvers[0].token", "ingressNginx.controller.token"}},
		{"maconly.enc.yaml", "config.plain.yaml", keyA, []string{"global.apiKey", "certManager.password", "certManager.solvers[0].token", "ingressNginx.controller.token"}},
		{"two.enc.yaml", "config.plain.yaml", keyB, nil},
		{"pgp.enc.yaml", "config.plain.yaml", keyPGP, nil},
		{"bench100.enc.yaml", "bench100.plain.yaml", keyA, nil},
	} {
		t.Run(tc.enc, func(t *testing.T) {
			data := fixture(t, tc.enc)
			if !IsEncrypted(data) {
				t.Fatal("IsEncrypted = false")
			}
			p, err := keyring(t, tc.key).Open(context.Background(), tc.enc, data)
			if err != nil {
				t.Fatal(err)
			}
			got, want := semantic(t, p.Data), semantic(t, fixture(t, tc.plain))
			if g, w := fmt.Sprintf("%v", got), fmt.Sprintf("%v", want); g != w {
				t.Errorf("plaintext differs\n got %#v\nwant %#v", got, want)
			}
			if tc.encrypted != nil {
				var paths []string
				for _, p := range p.Encrypted {
					paths = append(paths, p.String())
				}
				if !reflect.DeepEqual(paths, tc.encrypted) {
					t.Errorf("encrypted paths\n got %q\nwant %q", paths, tc.encrypted)
				}
			}
			if strings.HasSuffix(tc.enc, ".json") != (p.Format == JSON) || bytes.Contains(p.Data, []byte("sops")) || bytes.Contains(p.Data, []byte("ENC[")) {
				t.Errorf("format %v, or metadata left in\n%s", p.Format, p.Data)
			}
		})
	}
}

func TestFixturesRecipients(t *testing.T) {
	got, err := Recipients("two.enc.yaml", fixture(t, "two.enc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{recipientOf(t, keyA), recipientOf(t, keyB)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q want %q", got, want)
	}
}

// mutate replaces the first occurrence of old in a fixture.
func mutate(t *testing.T, name, old, new string) []byte {
	t.Helper()
	b := fixture(t, name)
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s has no %q", name, old)
	}
	return bytes.Replace(b, []byte(old), []byte(new), 1)
}

// encValue is the ENC[…] text of a top-level-indented key in a fixture.
func encValue(t *testing.T, name, key string) string {
	t.Helper()
	for _, l := range strings.Split(string(fixture(t, name)), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), key+": ENC[") {
			v := strings.TrimSpace(l)[len(key)+2:]
			return v[:strings.Index(v, "]")+1]
		}
	}
	t.Fatalf("%s: no %s", name, key)
	return ""
}

func TestDecryptErrors(t *testing.T) {
	a := recipientOf(t, keyA)
	dir := t.TempDir()
	emptyDir := filepath.Join(dir, "empty")
	if err := os.Mkdir(emptyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	pw := encValue(t, "config.enc.yaml", "password")
	email := encValue(t, "config.enc.yaml", "email")
	macLine := ""
	for _, l := range strings.Split(string(fixture(t, "config.enc.yaml")), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "mac: ENC[") {
			macLine = strings.TrimSpace(l)
		}
	}
	flip := func(s string) string { // change one base64 data character
		i := strings.Index(s, "data:") + 5
		c := byte('A')
		if s[i] == 'A' {
			c = 'B'
		}
		return s[:i] + string(c) + s[i+1:]
	}
	for _, tc := range []struct {
		name    string
		kr      *Keyring
		data    []byte
		reason  Reason
		sent    error
		path    string
		inError []string
	}{
		{"nil keyring", nil, fixture(t, "config.enc.yaml"), NoKey, ErrNoKey, "", []string{"config.enc.yaml", a}},
		{"empty key dir", keyring(t, emptyDir), fixture(t, "config.enc.yaml"), NoKey, ErrNoKey, "", []string{a}},
		{"wrong key", keyring(t, keyB), fixture(t, "config.enc.yaml"), WrongKey, ErrWrongKey, "", []string{a, recipientOf(t, keyB)}},
		{"age key for a PGP file", keyring(t, keyA), fixture(t, "pgp.enc.yaml"), WrongKey, ErrWrongKey, "", []string{"encrypted for pgp:" + pgpFingerprint(t), "keyring holds " + a}},
		{"PGP key for an age file", keyring(t, keyPGP), fixture(t, "config.enc.yaml"), WrongKey, ErrWrongKey, "", []string{"encrypted for " + a, "keyring holds pgp:" + pgpFingerprint(t)}},
		{"tampered value", keyring(t, keyA), mutate(t, "config.enc.yaml", pw, flip(pw)), Tampered, ErrTampered, "certManager.password", []string{"config.enc.yaml:14", "certManager.password"}},
		{"value moved to another key", keyring(t, keyA), mutate(t, "config.enc.yaml", "email: "+email, "email: "+pw), Tampered, ErrTampered, "certManager.email", []string{"certManager.email"}},
		{"value replaced by plaintext", keyring(t, keyA), mutate(t, "config.enc.yaml", pw, "hunter2"), Tampered, ErrTampered, "certManager.password", []string{"not encrypted"}},
		{"tampered MAC", keyring(t, keyA), mutate(t, "config.enc.yaml", macLine, "mac: "+flip(macLine[5:])), Tampered, ErrTampered, "", []string{"sops.mac"}},
		{"unencrypted value changed", keyring(t, keyA), mutate(t, "config.enc.yaml", "shown-in-clear", "changed"), Tampered, ErrTampered, "", []string{"MAC mismatch"}},
		{"encrypted value removed", keyring(t, keyA), mutate(t, "config.enc.yaml", "    password: "+pw+"\n", ""), Tampered, ErrTampered, "", []string{"MAC mismatch"}},
		{"lastmodified changed", keyring(t, keyA), mutate(t, "config.enc.yaml", "lastmodified: \"20", "lastmodified: \"19"), Tampered, ErrTampered, "", []string{"sops.mac"}},
		{"not encrypted", keyring(t, keyA), fixture(t, "config.plain.yaml"), Malformed, ErrMalformed, "", []string{"no sops metadata"}},
		{"bad lastmodified", keyring(t, keyA), mutate(t, "config.enc.yaml", "lastmodified: \"20", "lastmodified: \"x20"), Malformed, ErrMalformed, "", []string{"lastmodified"}},
		{"two rules", keyring(t, keyA), mutate(t, "regex.enc.yaml", "    encrypted_regex:", "    unencrypted_suffix: _x\n    encrypted_regex:"), Malformed, ErrMalformed, "", []string{"more than one"}},
		{"comment rule", keyring(t, keyA), mutate(t, "regex.enc.yaml", "    encrypted_regex:", "    encrypted_comment_regex:"), Malformed, ErrMalformed, "", []string{"encrypted_comment_regex"}},
		{"alias", keyring(t, keyA), mutate(t, "config.enc.yaml", "global:\n", "global: &g\n"), Malformed, ErrMalformed, "global", []string{"aliases"}},
		{"too large", keyring(t, keyA), append(fixture(t, "config.enc.yaml"), bytes.Repeat([]byte("#"), MaxFileSize)...), TooLarge, ErrTooLarge, "", []string{"at most"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.kr.Decrypt(context.Background(), "config.enc.yaml", tc.data)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("want *Error, got %v", err)
			}
			if e.Reason != tc.reason || !errors.Is(err, tc.sent) || !e.Terminal() {
				t.Fatalf("reason %s, want %s: %v", e.Reason, tc.reason, err)
			}
			if e.Path.String() != tc.path {
				t.Errorf("path %q, want %q", e.Path, tc.path)
			}
			for _, s := range tc.inError {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			if strings.Contains(err.Error(), "AGE-SECRET-KEY") {
				t.Errorf("error holds a key: %v", err)
			}
		})
	}
}

// TestMACOnlyEncrypted: with mac_only_encrypted, SOPS's MAC covers the
// encrypted values only, so a clear value may change and an encrypted
// one may not.
func TestMACOnlyEncrypted(t *testing.T) {
	k := keyring(t, keyA)
	if _, err := k.Decrypt(context.Background(), "m.yaml", mutate(t, "maconly.enc.yaml", "shown-in-clear", "changed")); err != nil {
		t.Fatal(err)
	}
	_, err := k.Decrypt(context.Background(), "m.yaml", mutate(t, "regex.enc.yaml", "shown-in-clear", "changed"))
	if !errors.Is(err, ErrTampered) {
		t.Fatalf("without mac_only_encrypted a clear value is covered: %v", err)
	}
}

func writeKey(t *testing.T, file string, ids ...string) {
	t.Helper()
	if err := os.WriteFile(file+".tmp", []byte(strings.Join(ids, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".tmp", file); err != nil {
		t.Fatal(err)
	}
}

// TestKeyRotation rewrites the key file between decryptions: the keyring
// follows without being rebuilt.
func TestKeyRotation(t *testing.T) {
	other, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	secretA := strings.TrimSpace(string(fixture(t, "keys/test-only-age-key-a.txt")))
	dir := t.TempDir()
	file := filepath.Join(dir, "keys.txt")
	writeKey(t, file, other.String())
	k := keyring(t, dir)
	data := fixture(t, "config.enc.yaml")
	ctx := context.Background()
	if _, err := k.Decrypt(ctx, "c.yaml", data); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("before rotation: %v", err)
	}
	writeKey(t, file, other.String(), secretA)
	if _, err := k.Decrypt(ctx, "c.yaml", data); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	writeKey(t, file, other.String())
	if _, err := k.Decrypt(ctx, "c.yaml", data); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("after removal: %v", err)
	}
	// A Secret volume: files are symlinks into a ..data directory that
	// is swapped whole.
	vol := t.TempDir()
	for i, content := range []string{other.String(), secretA} {
		ts := filepath.Join(vol, fmt.Sprintf("..2026_%d", i))
		if err := os.Mkdir(ts, 0o755); err != nil {
			t.Fatal(err)
		}
		writeKey(t, filepath.Join(ts, "age.agekey"), content)
		os.Remove(filepath.Join(vol, "..data_tmp"))
		if err := os.Symlink(filepath.Base(ts), filepath.Join(vol, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(vol, "..data_tmp"), filepath.Join(vol, "..data")); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := os.Symlink("..data/age.agekey", filepath.Join(vol, "age.agekey")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := keyring(t, vol).Decrypt(ctx, "c.yaml", data); err != nil {
		t.Fatalf("secret volume: %v", err)
	}
}

func TestKeyringNeverShowsKeys(t *testing.T) {
	k := keyring(t, keyA, keyB)
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("keys", "keyring", k)
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%+v", k), fmt.Sprintf("%#v", k), logged.String()} {
		if strings.Contains(s, "AGE-SECRET-KEY") || !strings.Contains(s, recipientOf(t, keyA)) {
			t.Errorf("shows a secret key or lacks the public one: %s", s)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.txt")
	writeKey(t, bad, "# comment", "AGE-SECRET-KEY-1NOTAKEYATALLBUTLOOKSLIKEONE")
	_, err := NewKeyring(bad)
	if err == nil || !strings.Contains(err.Error(), bad+" line 2") || strings.Contains(err.Error(), "NOTAKEY") {
		t.Fatalf("want an error naming the file and line, not the text: %v", err)
	}
}

func TestPreview(t *testing.T) {
	p, err := Preview("config.enc.yaml", fixture(t, "config.enc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got := semantic(t, p.Data).(map[string]any)
	g := got["global"].(map[string]any)
	if g["apiKey"] != Placeholder || g["replicas"] != Placeholder || g["password_unencrypted"] != "shown-in-clear" || g["empty"] != "" {
		t.Errorf("global: %v", g)
	}
	solvers := got["certManager"].(map[string]any)["solvers"].([]any)
	if len(solvers) != 2 || solvers[0].(map[string]any)["token"] != Placeholder {
		t.Errorf("structure lost: %v", got["certManager"])
	}
	if len(p.Encrypted) != 17 {
		t.Errorf("encrypted paths: %v", p.Encrypted)
	}
}

func TestIsEncrypted(t *testing.T) {
	for _, tc := range []struct {
		data string
		want bool
	}{
		{"a: 1\n", false},
		{"", false},
		{"sops: 1\n", false},
		{"sops:\n  mac: x\n", false},
		{"a: 1\nsops:\n  mac: x\n  lastmodified: y\n", true},
		{`{"sops": {"mac": "x", "lastmodified": "y"}}`, true},
		{"- a\n", false},
	} {
		if got := IsEncrypted([]byte(tc.data)); got != tc.want {
			t.Errorf("IsEncrypted(%q) = %v", tc.data, got)
		}
	}
}

// BenchmarkDecrypt decrypts a 100-module config (testdata/bench100): a
// global section and per module a flag and a section with two encrypted
// credentials among seven values. It reports the heap the plaintext and
// its tree keep after decryption.
func BenchmarkDecrypt(b *testing.B) {
	k := keyring(b, keyA)
	data := fixture(b, "bench100.enc.yaml")
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	var keep *Plain
	for b.Loop() {
		p, err := k.Open(ctx, "bench100.enc.yaml", data)
		if err != nil {
			b.Fatal(err)
		}
		keep = p
	}
	b.StopTimer()
	b.ReportMetric(float64(retained(func() any {
		p, _ := k.Open(ctx, "bench100.enc.yaml", data)
		return p
	})), "retained-B")
	_ = keep
}

func pgpFingerprint(t testing.TB) string {
	t.Helper()
	ents, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(fixture(t, "keys/test-only-pgp-key.asc")))
	if err != nil {
		t.Fatal(err)
	}
	return fingerprint(ents[0])
}

// TestPGPKeys: a PGP key shows as its fingerprint only, and one behind a
// passphrase is refused when the keyring reads it.
func TestPGPKeys(t *testing.T) {
	k := keyring(t, keyPGP)
	if s := fmt.Sprintf("%v %#v", k, k); strings.Contains(s, "PRIVATE") || !strings.Contains(s, "pgp:"+pgpFingerprint(t)) {
		t.Errorf("keyring shows %s", s)
	}
	e, err := openpgp.NewEntity("locked", "", "locked@example.invalid", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.EncryptPrivateKeys([]byte("passphrase"), nil); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w, err := pgparmor.Encode(&b, openpgp.PrivateKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SerializePrivateWithoutSigning(w, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	file := filepath.Join(t.TempDir(), "locked.asc")
	if err := os.WriteFile(file, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewKeyring(file); err == nil || !strings.Contains(err.Error(), "passphrase") || !strings.Contains(err.Error(), file) {
		t.Fatalf("want a refusal naming the file: %v", err)
	}
}
