package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/clusterconfig"
)

// config export reads the live values ConfigMap through the API server,
// with start's settings, and writes a config file that loads back to the
// same values; keys that mean nothing are named on stderr.
func TestConfigExport(t *testing.T) {
	ns := namespace(t, "export")
	data := map[string]string{
		"global":                "clusterName: prod\nmodules:\n  https: {mode: CertManager}\n",
		"echoServer":            "replicas: 2\ngreeting: hi\n",
		"echoServerEnabled":     "true",
		"debugToolsEnabled":     "false",
		"echoServerMaintenance": "NoResourceReconciliation",
		"featureFlags":          `{"flags": {"newCheckout": true}}`,
		"emptyModule":           "",
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "values"}, Data: data, BinaryData: map[string][]byte{"blob": {1, 2}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string, error) {
		cmd := exec.Command(binPath, append([]string{"config", "export"}, args...)...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.KubeconfigPath, "ADDON_OPERATOR_NAMESPACE="+ns)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}

	root := t.TempDir()
	file := filepath.Join(root, "clusters", "prod", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := run("--config-map", "values", "--output", file)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, w := range []string{"left out key emptyModule", "left out key blob: binaryData", "wrote 6 key(s) of ConfigMap " + ns + "/values to " + file} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	if stdout != "" {
		t.Errorf("stdout with --output: %q", stdout)
	}
	// the file is the cluster's config: it loads back to the same values
	cfg, err := clusterconfig.Load(context.Background(), root, clusterconfig.Settings{Cluster: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	delete(data, "emptyModule")
	want, _ := clusterconfig.ParseData(data)
	got, err := clusterconfig.ParseData(cfg.Data)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip: %v\n got %v\nwant %v", err, got, want)
	}

	// stdout without --output; the environment's ConfigMap name
	written, _ := os.ReadFile(file)
	t.Setenv("ADDON_OPERATOR_CONFIG_MAP", "values")
	cmd := exec.Command(binPath, "config", "export")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.KubeconfigPath, "ADDON_OPERATOR_NAMESPACE="+ns)
	out, err := cmd.Output()
	if err != nil || string(out) != string(written) {
		t.Fatalf("stdout: %v\n%s\nwant\n%s", err, out, written)
	}

	// a ConfigMap that does not exist is an error naming it, not an empty file
	if _, stderr, err := run("--config-map", "nope"); err == nil || !strings.Contains(stderr, "ConfigMap "+ns+"/nope not found") {
		t.Fatalf("a missing ConfigMap: %v\n%s", err, stderr)
	}
}
