package clusterconfig

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/addonops/addon-operator/secretfile"
)

// The fleet in testdata/fleet: a common file, prod-eu (a file and a
// SOPS-encrypted file, for the test-only key of secretfile's testdata),
// staging (a folder of files) and dev (no config).
const (
	fleet = "testdata/fleet"
	keyA  = "../secretfile/testdata/keys/test-only-age-key-a.txt"
	keyB  = "../secretfile/testdata/keys/test-only-age-key-b.txt"
)

var prodLayers = []Layer{{Path: "clusters/common.yaml"}, {Path: DefaultPath}, {Path: "clusters/{cluster}/secrets.yaml", Optional: true}}

func keyring(t testing.TB, path string) *secretfile.Keyring {
	t.Helper()
	k, err := secretfile.NewKeyring(path)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func parsed(t *testing.T, data map[string]string) map[string]any {
	t.Helper()
	v, err := ParseData(data)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestLoadFleet(t *testing.T) {
	for _, tc := range []struct {
		name      string
		s         Settings
		want      map[string]any
		text      map[string]string // exact ConfigMap text of some keys
		origin    map[string][]string
		encrypted map[string][]string
	}{
		{
			name: "prod-eu: common, cluster file, encrypted file",
			s:    Settings{Cluster: "prod-eu", Layers: prodLayers, Keyring: keyring(t, keyA)},
			want: map[string]any{
				"global":                  map[string]any{"domain": "example.com", "clusterName": "prod-eu", "registry": map[string]any{"host": "registry.example.com", "mirrors": []any{"mirror-eu.example.com"}}},
				"certManager":             map[string]any{"email": "ops@example.com", "solver": "dns", "apiToken": "cf-token-123"},
				"certManagerEnabled":      true,
				"certManagerDrift":        "warn",
				"ingressNginx":            map[string]any{"replicas": float64(4), "config": map[string]any{"use-gzip": "true"}},
				"ingressNginxEnabled":     true,
				"ingressNginxMaintenance": "NoResourceReconciliation",
				"monitoringEnabled":       true,
				"monitoring":              map[string]any{"retention": "30d", "grafana": map[string]any{"adminPassword": "very-secret", "users": []any{"alice", "bob"}}},
			},
			text:   map[string]string{"ingressNginxMaintenance": "NoResourceReconciliation", "certManagerDrift": "warn", "monitoringEnabled": "true"},
			origin: map[string][]string{"certManager": {"clusters/common.yaml", "clusters/prod-eu/secrets.yaml"}, "monitoringEnabled": {"clusters/common.yaml", "clusters/prod-eu/config.yaml"}},
			encrypted: map[string][]string{
				"certManager": {"solver", "apiToken"},
				"monitoring":  {"grafana.adminPassword", "grafana.users[0]", "grafana.users[1]"},
			},
		},
		{
			name: "staging: a folder, in name order, other files ignored",
			s:    Settings{Cluster: "staging", Layers: []Layer{{Path: "clusters/common.yaml"}, {Path: "clusters/{cluster}/"}}},
			want: map[string]any{
				"global":              map[string]any{"domain": "example.com", "clusterName": "staging", "logLevel": "debug", "registry": map[string]any{"host": "registry.example.com", "mirrors": []any{"mirror-a.example.com", "mirror-b.example.com"}}},
				"certManager":         map[string]any{"email": "ops@example.com", "solver": "http"},
				"certManagerEnabled":  false,
				"ingressNginx":        map[string]any{"replicas": float64(1), "config": map[string]any{"use-gzip": "true"}},
				"ingressNginxEnabled": true,
				"monitoringEnabled":   false,
			},
			origin: map[string][]string{"global": {"clusters/common.yaml", "clusters/staging/10-base.yaml", "clusters/staging/20-debug.yaml"}},
		},
		{
			name: "dev: an optional cluster file that is missing",
			s:    Settings{Cluster: "dev", Layers: []Layer{{Path: "clusters/common*.yaml"}, {Path: DefaultPath, Optional: true}}},
			want: map[string]any{
				"global":              map[string]any{"domain": "example.com", "logLevel": "info", "registry": map[string]any{"host": "registry.example.com", "mirrors": []any{"mirror-a.example.com", "mirror-b.example.com"}}},
				"certManager":         map[string]any{"email": "ops@example.com", "solver": "http"},
				"certManagerEnabled":  true,
				"ingressNginx":        map[string]any{"replicas": float64(2), "config": map[string]any{"use-gzip": "true"}},
				"ingressNginxEnabled": true,
				"monitoringEnabled":   false,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(context.Background(), fleet, tc.s)
			if err != nil {
				t.Fatal(err)
			}
			if got := parsed(t, c.Data); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("data\n got %v\nwant %v", got, tc.want)
			}
			for k, want := range tc.text {
				if c.Data[k] != want {
					t.Errorf("text of %s: %q, want %q", k, c.Data[k], want)
				}
			}
			for k, want := range tc.origin {
				if !reflect.DeepEqual(c.Origin[k], want) {
					t.Errorf("origin of %s: %q, want %q", k, c.Origin[k], want)
				}
			}
			if len(c.Encrypted) != len(tc.encrypted) {
				t.Errorf("encrypted keys: %v", c.Encrypted)
			}
			for k, want := range tc.encrypted {
				var got []string
				for _, p := range c.Encrypted[k] {
					got = append(got, p.String())
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("encrypted under %s: %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestPreviewPlaceholders(t *testing.T) {
	c, err := Load(context.Background(), fleet, Settings{Cluster: "prod-eu", Layers: prodLayers, Preview: true})
	if err != nil {
		t.Fatal(err)
	}
	cm := parsed(t, c.Data)["certManager"].(map[string]any)
	if cm["apiToken"] != secretfile.Placeholder || cm["email"] != "ops@example.com" {
		t.Fatalf("certManager: %v", cm)
	}
}

// tree writes files into a temporary tree.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, text := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestLoadErrors(t *testing.T) {
	enc, err := os.ReadFile(filepath.Join(fleet, "clusters/prod-eu/secrets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	flagEnc, err := os.ReadFile("../secretfile/testdata/config.enc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// config.enc.yaml encrypts certManagerEnabled (line 22), as sops does by default.
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "x.yaml"), []byte("global: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const f = "clusters/c1/config.yaml"
	one := func(text string) map[string]string { return map[string]string{f: text} }
	for _, tc := range []struct {
		name  string
		files map[string]string
		s     Settings
		want  []string
		as    any
	}{
		{"missing required file", nil, Settings{Cluster: "c1"}, []string{f, "no such file", "optional"}, nil},
		{"a list, not a mapping", one("- a\n- b\n"), Settings{Cluster: "c1"}, []string{f + ":1:", "not a mapping"}, nil},
		{"invalid YAML", one("global:\n  a: 1\n b: [\n"), Settings{Cluster: "c1"}, []string{f + ":2:", "invalid YAML"}, nil},
		{"flag not a boolean", one("global: {}\nfooEnabled: yes\n"), Settings{Cluster: "c1"}, []string{f + ":2:", "key fooEnabled", `want true or false, got a string "yes"`}, nil},
		{"global not a mapping", one("global: [1]\n"), Settings{Cluster: "c1"}, []string{f + ":1:", "key global", "want a mapping, got a list"}, nil},
		{"module name, not values key", one("cert-manager:\n  a: 1\n"), Settings{Cluster: "c1"}, []string{f + ":1:", "key cert-manager", "values key certManager"}, nil},
		{"unknown shape", one("Foo_Bar: 1\n"), Settings{Cluster: "c1"}, []string{f + ":1:", "key Foo_Bar", "not a ConfigMap key"}, nil},
		{"bad maintenance", one("\nfooMaintenance: Off\n"), Settings{Cluster: "c1"}, []string{f + ":2:", "key fooMaintenance", "NoResourceReconciliation or Managed"}, nil},
		{"bad drift", one("fooDrift: fix\n"), Settings{Cluster: "c1"}, []string{f + ":1:", "key fooDrift", "warn or correct"}, nil},
		{"module the tree lacks", one("global: {}\nfoo:\n  a: 1\n"), Settings{Cluster: "c1", Modules: []string{"bar"}}, []string{f + ":2:", "key foo", "no module with values key foo"}, nil},
		{"flag of a module the tree lacks", one("fooEnabled: true\n"), Settings{Cluster: "c1", Modules: []string{"bar"}}, []string{f + ":1:", "key fooEnabled", "no module"}, nil},
		{"key twice", one("foo: {}\nfoo: {}\n"), Settings{Cluster: "c1"}, []string{f, "foo"}, nil},
		{"two documents", one("foo: {}\n---\nbar: {}\n"), Settings{Cluster: "c1"}, []string{f + ":2:", "several YAML documents"}, nil},
		{"too large", one("global:\n  a: " + strings.Repeat("x", MaxFileSize) + "\n"), Settings{Cluster: "c1"}, []string{f, "over 1048576 bytes"}, nil},
		{"path leaves the root", nil, Settings{Cluster: "c1", Layers: []Layer{{Path: "../x.yaml"}}}, []string{"../x.yaml", "leaves the tree's root"}, nil},
		{"bad cluster name", nil, Settings{Cluster: "../c1"}, []string{`cluster name "../c1"`}, nil},
		{"encrypted, no key", one(string(enc)), Settings{Cluster: "c1"}, []string{f, "SOPS-encrypted for age1", "no decryption key"}, nil},
		{"encrypted, wrong key", one(string(enc)), Settings{Cluster: "c1", Keyring: keyring(t, keyB)}, []string{f, "none of the configured keys"}, new(*secretfile.Error)},
		{"encrypted, tampered", one(strings.Replace(string(enc), "solver: ENC[AES256_GCM,data:", "solver: ENC[AES256_GCM,data:AA", 1)), Settings{Cluster: "c1", Keyring: keyring(t, keyA)}, []string{f + ":2", "certManager.solver", "tampered"}, new(*secretfile.Error)},
		{"encrypted flag in a preview", one(string(flagEnc)), Settings{Cluster: "c1", Preview: true}, []string{f + ":22:", "key certManagerEnabled", "preview without a key"}, nil},
		{"merge key", one("base: &b\n  a: 1\nfoo:\n  <<: *b\n"), Settings{Cluster: "c1"}, []string{f, "key foo", "merge keys"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(context.Background(), tree(t, tc.files), tc.s)
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Errorf("not a *Error: %T", err)
			}
			if tc.as != nil && !errors.As(err, tc.as) {
				t.Errorf("not a %T: %v", tc.as, err)
			}
		})
	}
	t.Run("symlink out of the tree", func(t *testing.T) {
		root := tree(t, nil)
		if err := os.MkdirAll(filepath.Join(root, "clusters/c1"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(outside, "x.yaml"), filepath.Join(root, f)); err != nil {
			t.Fatal(err)
		}
		_, err := Load(context.Background(), root, Settings{Cluster: "c1"})
		if err == nil || !strings.Contains(err.Error(), f) || !strings.Contains(err.Error(), "leaves the tree's root through a symlink") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestMigrationRoundTrip(t *testing.T) {
	data := map[string]string{
		"global":                  "domain: example.com\nregistry:\n  mirrors: [a, b]\n",
		"certManager":             "{\"email\": \"ops@example.com\", \"replicas\": 2}",
		"certManagerEnabled":      "true",
		"monitoringEnabled":       "false",
		"ingressNginx":            "false",
		"ingressNginxMaintenance": "NoResourceReconciliation",
		"ingressNginxDrift":       "warn",
		"odd":                     "text: \"123\"\nwhen: 2024-01-02\nyes: yes\n",
		"empty":                   "",
	}
	file, dropped, err := FromConfigMap(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(dropped, []string{"empty"}) {
		t.Errorf("dropped %q", dropped)
	}
	root := tree(t, map[string]string{"clusters/c1/config.yaml": string(file)})
	c, err := Load(context.Background(), root, Settings{Cluster: "c1"})
	if err != nil {
		t.Fatalf("%v\n%s", err, file)
	}
	delete(data, "empty")
	if got, want := parsed(t, c.Data), parsed(t, data); !reflect.DeepEqual(got, want) {
		t.Errorf("round trip\n got %v\nwant %v\nfile:\n%s", got, want, file)
	}
	for _, k := range []string{"ingressNginxMaintenance", "ingressNginxDrift", "certManagerEnabled"} {
		if c.Data[k] != data[k] {
			t.Errorf("%s: %q, want %q", k, c.Data[k], data[k])
		}
	}
	again, _, err := FromConfigMap(c.Data)
	if err != nil || string(again) != string(file) {
		t.Errorf("not stable: %v\n%s\n---\n%s", err, file, again)
	}
}

// FuzzDecode: no input makes the parser panic, and what it accepts
// encodes as ConfigMap data that reads back.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{"global: {a: 1}\nfooEnabled: true\n", "- 1", "a: &x [*x]", "fooMaintenance: Managed", "{", "a: !!binary aGk=\nb: 2001-12-14t21:59:43.10-05:00\n", "a:\n  <<: {b: 1}\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := newMerger(Settings{})
		d, err := m.decode(context.Background(), "f.yaml", data)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		m.apply("f.yaml", d)
		c, err := m.result([]string{"f.yaml"})
		if err != nil {
			return
		}
		if _, err := ParseData(c.Data); err != nil {
			t.Fatalf("data does not read back: %v\n%v", err, fmt.Sprint(c.Data))
		}
	})
}
