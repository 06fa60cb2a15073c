package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// configPath is cluster test's config in git (the default layer).
const configPath = "clusters/test/config.yaml"

// threeOn are modules alpha, beta and gamma, enabled.
func threeOn() map[string]string {
	files := merged(moduleFiles("001-alpha", "alpha", "1"), moduleFiles("002-beta", "beta", "1"), moduleFiles("003-gamma", "gamma", "1"))
	files["modules/values.yaml"] = "alphaEnabled: true\nbetaEnabled: true\ngammaEnabled: true\n"
	return files
}

// withConfig is threeOn with the cluster's config in git.
func withConfig(config string) map[string]string {
	files := threeOn()
	files[configPath] = config
	return files
}

// sopsgen is secretfile/testdata/sopsgen built once: the sops library
// itself, in a module of its own, makes the test's age keys and SOPS
// files at run time (make test's test-sops builds it first).
var sopsgen = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "sopsgen-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "sopsgen")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join("..", "..", "secretfile", "testdata", "sopsgen")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build sopsgen: %v\n%s", err, out)
	}
	return bin, nil
})

// runSopsgen runs sopsgen with args and returns what it printed.
func runSopsgen(t *testing.T, args ...string) []byte {
	t.Helper()
	bin, err := sopsgen()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("sopsgen %v: %v", args, err)
	}
	return out
}

// newAgeKey makes an age identity in a new file and returns its text.
func newAgeKey(t *testing.T) []byte {
	t.Helper()
	file := filepath.Join(t.TempDir(), "key.txt")
	runSopsgen(t, "-keygen", file)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sopsEncrypt encrypts a YAML document with the sops library for key.
func sopsEncrypt(t *testing.T, plain string, key []byte) string {
	t.Helper()
	dir := t.TempDir()
	plainFile, keyFile := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "key.txt")
	if err := os.WriteFile(plainFile, []byte(plain), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	return string(runSopsgen(t, "-encrypt", plainFile, "-for", keyFile))
}

// TestConfigInGit: the cluster's config in git through the real binary,
// git server, API server and Helm, with one operator (docs/operator.md,
// "Config in git"): a settings commit applies and its commit status is
// posted; a ConfigMap value under a key git sets is config drift on
// /status, in the metric and in `source status`, and not applied; a
// rollback by ref restores the settings and the release's values; a
// commit that disables three modules through the config is held by the
// purge guard; a SOPS file decrypts, a tampered one is refused naming the
// file while the last good revision keeps running, and a commit for a
// new key runs once the key file is rewritten, without a restart.
func TestConfigInGit(t *testing.T) {
	f := newForgeSetup(t, "cfggit")
	ns, repo, forge := f.ns, f.repo, f.forge
	keyA, keyB := newAgeKey(t), newAgeKey(t)
	keyDir := t.TempDir()
	keyFile := filepath.Join(keyDir, "keys.txt")
	if err := os.WriteFile(keyFile, keyA, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "addon-operator"}, Data: map[string]string{"beta": "v: from-the-configmap\n"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	addr, logPath := operator(t, f.env("ADDON_OPERATOR_COMMIT_STATUS_PROVIDER=github",
		"ADDON_OPERATOR_COMMIT_STATUS_URL="+forge.GitHubURL(), "ADDON_OPERATOR_COMMIT_STATUS_REPOSITORY=platform/addons",
		"ADDON_OPERATOR_CLUSTER_CONFIG="+configPath, "ADDON_OPERATOR_SOPS_KEY_FILE="+keyDir, "ADDON_OPERATOR_PURGE_LIMIT=2")...)
	const context_ = "addon-operator/test"
	posted := func(commit, state string) bool { return slices.Contains(statesOf(forge, commit, context_), state) }
	alpha := func() string { return cmValue(ns, "001-alpha-cm") }
	source := func() map[string]any { m, _ := status(t, addr)["source"].(map[string]any); return m }

	// a settings commit: applied, its status posted; beta keeps the
	// ConfigMap's value, a key git does not set
	c2 := commitFiles(t, repo, "settings", withConfig("alpha:\n  v: git-2\n"))
	eventually(t, "alpha from git", func() bool { return alpha() == "git-2" && cmValue(ns, "002-beta-cm") == "from-the-configmap" })
	eventually(t, "c2's success", func() bool { return posted(c2, "success") })

	// config drift: reported, not applied
	cm, err := client.CoreV1().ConfigMaps(ns).Get(context.Background(), "addon-operator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["alpha"] = "v: from-the-configmap\n"
	if _, err := client.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the config drift on /status", func() bool {
		d, _ := json.Marshal(status(t, addr)["configDrift"])
		return string(d) == `[{"file":"`+configPath+`","key":"alpha","path":"v"}]` // a map's keys sorted
	})
	eventually(t, "the drift metric", func() bool {
		_, body := get(addr, "/metrics")
		return strings.Contains(body, `addon_operator_config_drift{key="alpha"} 1`)
	})
	var out bytes.Buffer
	if err := sourceStatus([]string{"--address", "http://" + addr}, &out); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "config files: "+configPath) || !strings.Contains(s, "config drift: alpha.v") {
		t.Fatalf("source status:\n%s", s)
	}
	if alpha() != "git-2" {
		t.Fatalf("the ConfigMap's override was applied: alpha %q", alpha())
	}

	// a rollback by ref restores the settings and the release's values
	// (alpha's settings alone: alpha alone runs, and the commit is reported)
	c3 := commitFiles(t, repo, "settings 3", withConfig("alpha:\n  v: git-3\n"))
	eventually(t, "alpha git-3", func() bool { return alpha() == "git-3" })
	eventually(t, "c3's success", func() bool { return posted(c3, "success") })
	setRefTo(t, ns, c2)
	eventually(t, "alpha rolled back to git-2", func() bool { return alpha() == "git-2" && status(t, addr)["revision"] == c2 })
	setRefTo(t, ns, "main")
	eventually(t, "alpha back to git-3", func() bool { return alpha() == "git-3" })

	// three modules disabled through the config: held by the purge guard
	held := commitFiles(t, repo, "disable all", withConfig("alphaEnabled: false\nbetaEnabled: false\ngammaEnabled: false\n"))
	eventually(t, "the purge guard's hold", func() bool {
		e, _ := status(t, addr)["treeError"].(string)
		return strings.Contains(e, "purge guard") && strings.Contains(e, "alpha, beta, gamma")
	})
	eventually(t, "the held commit's failure", func() bool { return posted(held, "failure") })
	for _, m := range []string{"alpha", "beta", "gamma"} {
		if ok, _ := helmClient(t, ns).Has(t.Context(), m); !ok {
			t.Fatalf("%s was uninstalled by a held commit", m)
		}
	}

	// a SOPS file decrypts with the key file's key
	encA := sopsEncrypt(t, "alpha:\n  v: sops-a\n", keyA)
	good := commitFiles(t, repo, "sops", withConfig(encA))
	eventually(t, "alpha from the SOPS file", func() bool { return alpha() == "sops-a" })

	// a tampered one is refused, naming the file; the good one runs on
	enc := encA
	i := strings.Index(enc, "v: ENC[AES256_GCM,data:") + len("v: ENC[AES256_GCM,data:")
	flipped := byte('A')
	if enc[i] == 'A' {
		flipped = 'B'
	}
	tampered := commitFiles(t, repo, "tampered", withConfig(enc[:i]+string(flipped)+enc[i+1:]))
	eventually(t, "the tampered file refused", func() bool {
		e, _ := source()["lastError"].(string)
		return strings.Contains(e, tampered[:12]) && strings.Contains(e, configPath) && strings.Contains(e, "tampered")
	})
	eventually(t, "the tampered commit's failure", func() bool { return posted(tampered, "failure") })
	for _, s := range forge.Statuses() {
		if s.Commit == tampered && s.State == "failure" && !strings.Contains(s.Description, configPath) {
			t.Fatalf("the failure does not name the file: %q", s.Description)
		}
	}
	if st := status(t, addr); st["revision"] != good || alpha() != "sops-a" {
		t.Fatalf("after the refusal: revision %v, alpha %q", st["revision"], alpha())
	}

	// a commit for another key: refused naming its recipient, until the
	// key file is rewritten; then it runs, without a restart
	rotated := commitFiles(t, repo, "new key", withConfig(sopsEncrypt(t, "alpha:\n  v: sops-b\n", keyB)))
	recipientB := publicKeyOf(t, keyB)
	eventually(t, "the wrong key refused", func() bool {
		e, _ := source()["lastError"].(string)
		return strings.Contains(e, rotated[:12]) && strings.Contains(e, recipientB)
	})
	eventually(t, "the wrong key's failure, naming the key", func() bool {
		for _, s := range forge.Statuses() {
			if s.Commit == rotated && s.State == "failure" && strings.Contains(s.Description, configPath+": SecretWrongKey for "+recipientB) {
				return true
			}
		}
		return false
	})
	if err := os.WriteFile(keyFile, keyB, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the rotated key's commit", func() bool { return alpha() == "sops-b" && status(t, addr)["revision"] == rotated })

	logs, _ := os.ReadFile(logPath)
	for _, secret := range []string{"AGE-SECRET-KEY-1", "sops-a", "sops-b"} {
		if bytes.Contains(logs, []byte(secret)) {
			t.Fatalf("the log holds %q", secret)
		}
	}
	if all, _ := json.Marshal(forge.Statuses()); bytes.Contains(all, []byte("sops-a")) {
		t.Fatal("a decrypted value reached the forge")
	}
}

// publicKeyOf is the "# public key:" line of an age-keygen key file.
func publicKeyOf(t *testing.T, key []byte) string {
	t.Helper()
	for _, l := range strings.Split(string(key), "\n") {
		if p, ok := strings.CutPrefix(l, "# public key: "); ok {
			return strings.TrimSpace(p)
		}
	}
	t.Fatal("no public key line")
	return ""
}
