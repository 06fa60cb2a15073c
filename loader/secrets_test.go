package loader

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/internal/testtree"
	"github.com/addonops/addon-operator/secretfile"
	"github.com/addonops/addon-operator/values"
)

// The fixtures in testdata/secrets were encrypted by the sops library
// (secretfile/testdata/sopsgen) for secretfile's committed test-only keys.
const (
	testKeyA = "../secretfile/testdata/keys/test-only-age-key-a.txt"
	testKeyB = "../secretfile/testdata/keys/test-only-age-key-b.txt"
)

func secretFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "secrets", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func testKeyring(t *testing.T, path string) *secretfile.Keyring {
	t.Helper()
	k, err := secretfile.NewKeyring(path)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// secretTree is a tree whose module's values.yaml and common values.yaml
// are SOPS-encrypted, with a schema that checks the decrypted values.
func secretTree(t *testing.T, common, module, schema string) string {
	return testtree.New(t, map[string]string{
		"modules/values.yaml":                                common,
		"modules/010-echo-server/Chart.yaml":                 "apiVersion: v2\nname: echo-server\nversion: 0.1.0\n",
		"modules/010-echo-server/values.yaml":                module,
		"modules/010-echo-server/openapi/config-values.yaml": schema,
	})
}

const echoSchema = "type: object\nproperties:\n  replicas: {type: integer}\n  token: {type: string}\n  nested:\n    type: object\n    properties:\n      password: {type: string}\n      user: {type: string}\n"

// An encrypted values.yaml is decrypted with the keyring (its values reach
// the store, its encrypted paths Model.Encrypted), shown with placeholders
// in a preview, and refused naming the file and its recipients without a
// key or with the wrong one.
func TestLoadEncryptedValues(t *testing.T) {
	t.Parallel()
	common, module := secretFixture(t, "common-values.enc.yaml"), secretFixture(t, "module-values.enc.yaml")
	recipientA := "age154fysf0cagqy83jzp5rqjua9s4p74vdpfrzagnl0mfhtmh53y52q6p47df"
	for _, tc := range []struct {
		name      string
		opts      []Option
		token     string // echoServer.token the module's values get
		apiKey    string // global.apiKey
		wantErr   []string
		wantIsErr error
	}{
		{name: "key", opts: []Option{WithSecrets(testKeyring(t, testKeyA), false)}, token: "s3cret-token", apiKey: "global-key"},
		{name: "preview without a key", opts: []Option{WithSecrets(nil, true)}, token: secretfile.Placeholder, apiKey: secretfile.Placeholder},
		{name: "no option", wantErr: []string{"values.yaml", recipientA, "no decryption key"}, wantIsErr: secretfile.ErrNoKey},
		{name: "wrong key", opts: []Option{WithSecrets(testKeyring(t, testKeyB), false)}, wantErr: []string{"values.yaml", recipientA, "none of the configured keys"}, wantIsErr: secretfile.ErrWrongKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := secretTree(t, common, module, echoSchema)
			m, err := New(append(tc.opts, WithLogger(quietLogger()))...).Load(context.Background(), root, filepath.Join(root, "modules"), "")
			if tc.wantErr != nil {
				if err == nil || !errors.Is(err, tc.wantIsErr) {
					t.Fatalf("want %v, got %v", tc.wantIsErr, err)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error lacks %q: %v", w, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			store, _, err := values.NewStore(m.Values)
			if err != nil {
				t.Fatal(err)
			}
			if err := store.CheckModuleConfig("echoServer"); err != nil {
				t.Fatalf("the decrypted values against the schema: %v", err)
			}
			v, err := store.ModuleValues("echoServer", nil)
			if err != nil {
				t.Fatal(err)
			}
			es := v["echoServer"].(map[string]any)
			g := v["global"].(map[string]any)
			if es["token"] != tc.token || es["nested"].(map[string]any)["user"] != "admin" || es["replicas"] != float64(2) && es["replicas"] != 2 || g["apiKey"] != tc.apiKey || g["region"] != "eu" {
				t.Fatalf("values: %v", v)
			}
			if m.Placeholders != (tc.token == secretfile.Placeholder) {
				t.Errorf("Placeholders = %v", m.Placeholders)
			}
			want := map[string][]secretfile.Path{"echoServer": {{"token"}, {"nested", "password"}}, "global": {{"apiKey"}}}
			if !reflect.DeepEqual(m.Encrypted, want) {
				t.Fatalf("Encrypted = %v, want %v", m.Encrypted, want)
			}
		})
	}
}

// Decrypted values are checked against the schemas as any values are: a
// schema that refuses the decrypted value fails the store with the
// module's values.yaml named.
func TestLoadEncryptedValuesValidated(t *testing.T) {
	t.Parallel()
	root := secretTree(t, "global: {}\n", secretFixture(t, "module-values.enc.yaml"),
		"type: object\nproperties:\n  replicas: {type: integer}\n  token: {type: string, pattern: '^tok-'}\n")
	m, err := New(WithSecrets(testKeyring(t, testKeyA), false), WithLogger(quietLogger())).Load(context.Background(), root, filepath.Join(root, "modules"), "")
	if err != nil {
		t.Fatal(err)
	}
	store, _, err := values.NewStore(m.Values)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.CheckModuleConfig("echoServer"); err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("a decrypted value the schema refuses: %v", err)
	}
}

// A preview without a key cannot read an encrypted flag: refused naming
// the file and the key, rather than read as a string the store refuses.
func TestLoadEncryptedFlagPreview(t *testing.T) {
	t.Parallel()
	root := secretTree(t, secretFixture(t, "common-flag.enc.yaml"), "echoServer: {}\n", echoSchema)
	_, err := New(WithSecrets(nil, true), WithLogger(quietLogger())).Load(context.Background(), root, filepath.Join(root, "modules"), "")
	if err == nil || !strings.Contains(err.Error(), filepath.Join("modules", "values.yaml")) || !strings.Contains(err.Error(), "key echoServerEnabled: encrypted") {
		t.Fatalf("an encrypted flag in a keyless preview: %v", err)
	}
	// with the key it is a flag like any
	m, err := New(WithSecrets(testKeyring(t, testKeyA), false), WithLogger(quietLogger())).Load(context.Background(), root, filepath.Join(root, "modules"), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Encrypted["echoServerEnabled"]; !ok {
		t.Fatalf("Encrypted = %v", m.Encrypted)
	}
}

// One key setting serves both: WithClusterConfig's keyring decrypts the
// values files, and WithSecrets' the cluster's config files.
func TestLoadSecretsOneKeySetting(t *testing.T) {
	t.Parallel()
	cfg, err := os.ReadFile("../secretfile/testdata/config.enc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{name: "the cluster's keyring", opts: []Option{WithClusterConfig(clusterconfig.Settings{Cluster: "a", Keyring: testKeyring(t, testKeyA)})}},
		{name: "WithSecrets' keyring", opts: []Option{WithSecrets(testKeyring(t, testKeyA), false), WithClusterConfig(clusterconfig.Settings{Cluster: "a"})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := secretTree(t, "global: {}\n", secretFixture(t, "module-values.enc.yaml"), echoSchema)
			testtree.Write(t, root, map[string]string{"clusters/a/config.yaml": string(cfg), // its modules' keys:
				"modules/020-cert-manager/values.yaml": "certManager: {}\n", "modules/030-ingress-nginx/values.yaml": "ingressNginx: {}\n"})
			m, err := New(append(tc.opts, WithLogger(quietLogger()))...).Load(context.Background(), root, filepath.Join(root, "modules"), "")
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Encrypted["echoServer"]) != 2 || len(m.Config.Encrypted["global"]) == 0 {
				t.Fatalf("Encrypted %v, Config.Encrypted %v", m.Encrypted, m.Config.Encrypted)
			}
		})
	}
}
