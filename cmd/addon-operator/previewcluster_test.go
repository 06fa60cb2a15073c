package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// render and diff preview one cluster of a fleet repository: a ref's
// config for --cluster-name is checked out and laid over --values, its
// SOPS-encrypted values.yaml decrypted with --sops-key-file or shown as
// <encrypted> without it, and Secrets' data redacted unless
// --show-secrets; diff compares the real data and prints it redacted.
func TestPreviewCluster(t *testing.T) {
	const keyA = "../../secretfile/testdata/keys/test-only-age-key-a.txt"
	enc, err := os.ReadFile("../../loader/testdata/secrets/module-values.enc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	repo := newRepo(t, t.TempDir())
	base := map[string]string{
		"modules/values.yaml":                                "echoServerEnabled: true\n",
		"modules/010-echo-server/Chart.yaml":                 "apiVersion: v2\nname: echo-server\nversion: 0.1.0\n",
		"modules/010-echo-server/values.yaml":                "echoServer:\n  replicas: 2\n  token: plain-token\n  nested: {password: pw-0, user: admin}\n",
		"modules/010-echo-server/templates/cm.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: echo\ndata:\n  greeting: {{ .Values.echoServer.greeting | quote }}\n",
		"modules/010-echo-server/templates/sec.yaml":         "apiVersion: v1\nkind: Secret\nmetadata:\n  name: echo\nstringData:\n  token: {{ .Values.echoServer.token | quote }}\n  user: {{ .Values.echoServer.nested.user | quote }}\n",
		"clusters/a/config.yaml":                             "echoServer:\n  greeting: from-git\n",
		"clusters/b/config.yaml":                             "echoServerEnabled: false\n",
		"modules/010-echo-server/openapi/config-values.yaml": "type: object\nproperties:\n  greeting: {type: string}\n  replicas: {type: integer}\n  token: {type: string}\n  nested: {type: object}\n",
	}
	c1 := commitFiles(t, repo, "plain", base)
	c2 := commitFiles(t, repo, "encrypted", map[string]string{"modules/010-echo-server/values.yaml": string(enc)})
	repoURL := "file://" + repo.Bare
	values := filepath.Join(t.TempDir(), "cm.yaml")
	if err := os.WriteFile(values, []byte("echoServer:\n  greeting: from-cm\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name       string
		args       []string
		want, gone []string
	}{
		{name: "the cluster's config, key, redacted", args: []string{"--ref", c2, "--cluster-name", "a", "--sops-key-file", keyA},
			want: []string{"# cluster config: clusters/a/config.yaml\n", `greeting: "from-git"`, "token: <redacted>", "user: <redacted>"}, gone: []string{"s3cret-token", "admin"}},
		{name: "shown", args: []string{"--ref", c2, "--cluster-name", "a", "--sops-key-file", keyA, "--show-secrets"},
			want: []string{`token: "s3cret-token"`}},
		{name: "without a key", args: []string{"--ref", c2, "--cluster-name", "a", "--show-secrets"},
			want: []string{`token: "<encrypted>"`, `user: "admin"`}, gone: []string{"s3cret-token"}},
		{name: "another cluster", args: []string{"--ref", c2, "--cluster-name", "b"},
			want: []string{"# enabled modules: \n"}},
		{name: "over --values", args: []string{"--ref", c2, "--cluster-name", "a", "--values", values},
			want: []string{`greeting: "from-git"`, "# config drift: echoServer.greeting is set by clusters/a/config.yaml"}},
		{name: "no cluster", args: []string{"--ref", c1, "--values", values, "--show-secrets"},
			want: []string{`greeting: "from-cm"`, `token: "plain-token"`}, gone: []string{"cluster config"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			if err := renderCommand(append([]string{"--repo", repoURL}, tc.args...), &out); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("lacks %q:\n%s", w, out.String())
				}
			}
			for _, g := range tc.gone {
				if strings.Contains(out.String(), g) {
					t.Errorf("shows %q:\n%s", g, out.String())
				}
			}
		})
	}

	// a wrong cluster name and a missing key are refused with the file
	var out strings.Builder
	if err := renderCommand([]string{"--repo", repoURL, "--ref", c2, "--cluster-name", "c"}, &out); err == nil || !strings.Contains(err.Error(), "clusters/c/config.yaml") {
		t.Fatalf("a cluster without a config: %v", err)
	}
	if err := renderCommand([]string{"--repo", repoURL, "--ref", c2, "--sops-key-file", "../../secretfile/testdata/keys/test-only-age-key-b.txt"}, &out); err == nil || !strings.Contains(err.Error(), "values.yaml") || !strings.Contains(err.Error(), "none of the configured keys") {
		t.Fatalf("the wrong key: %v", err)
	}

	// diff compares the real data: the token changed, printed redacted
	out.Reset()
	err = diffCommand([]string{"--repo", repoURL, "--from", c1, "--to", c2, "--cluster-name", "a", "--sops-key-file", keyA}, &out)
	if !errors.Is(err, errDiffFound) {
		t.Fatalf("diff: %v\n%s", err, out.String())
	}
	if s := out.String(); !strings.Contains(s, "# cluster config: clusters/a/config.yaml") || !strings.Contains(s, "changed: echo-server") || !strings.Contains(s, "+  token: <redacted (changed)>") || strings.Contains(s, "plain-token") || strings.Contains(s, "s3cret-token") {
		t.Fatalf("diff:\n%s", s)
	}
	out.Reset()
	err = diffCommand([]string{"--repo", repoURL, "--from", c1, "--to", c2, "--cluster-name", "a", "--sops-key-file", keyA, "--show-secrets"}, &out)
	if !errors.Is(err, errDiffFound) || !strings.Contains(out.String(), `+  token: "s3cret-token"`) {
		t.Fatalf("diff --show-secrets: %v\n%s", err, out.String())
	}
}
