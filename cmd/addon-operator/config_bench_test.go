package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/internal/benchtree"
)

// configBench is where BenchmarkConfigInGit's settings are: the same
// settings of gen-modules.sh 100's modules (a greeting each, every flag,
// the global section) in plain text (config.yaml) and with the greetings
// SOPS-encrypted for secretfile's test-only key a (flags.yaml beside
// secrets.yaml, made by secretfile/testdata/sopsgen).
const (
	configBench    = "testdata/configbench"
	configBenchKey = "../../secretfile/testdata/keys/test-only-age-key-a.txt"
)

// BenchmarkConfigInGit runs the real binary in git mode on the reference
// tree (N=100) three ways, alternated in one run, and reports each one's
// converge (process start to the first "converged"), its hook time per
// run and its peak RSS, and the converge of each as a ratio to the
// ConfigMap's (docs/benchmarks.md):
//   - configmap: the settings in the values ConfigMap (no cluster name);
//   - git: the same settings in clusters/bench/config.yaml;
//   - sops: the flags there, the settings in clusters/bench/secrets.yaml,
//     SOPS-encrypted, decrypted with an age key file.
func BenchmarkConfigInGit(b *testing.B) {
	const n, rounds = 100, 2
	tree := b.TempDir()
	if err := benchtree.Generate(n, tree); err != nil {
		b.Skip(err)
	}
	cmData := configMapData(b)
	key, err := filepath.Abs(configBenchKey)
	if err != nil {
		b.Fatal(err)
	}
	kinds := []struct {
		name  string
		want  string            // mod-aa's greeting in its release
		files map[string]string // copied from configBench into the repository
		env   []string
		cm    map[string]string
	}{
		{name: "configmap", want: "configured mod-aa", cm: cmData},
		{name: "git", want: "configured mod-aa", files: map[string]string{"config.yaml": "clusters/bench/config.yaml"},
			env: []string{"ADDON_OPERATOR_CLUSTER_NAME=bench"}},
		{name: "sops", want: "secret mod-aa", files: map[string]string{"flags.yaml": "clusters/bench/config.yaml", "secrets.yaml": "clusters/bench/secrets.yaml"},
			env: []string{"ADDON_OPERATOR_CLUSTER_NAME=bench", "ADDON_OPERATOR_CLUSTER_CONFIG=clusters/{cluster}/config.yaml,clusters/{cluster}/secrets.yaml",
				"ADDON_OPERATOR_SOPS_KEY_FILE=" + key}},
	}
	for range b.N {
		converge := map[string][]time.Duration{}
		for r := range rounds {
			for _, k := range kinds {
				repo := newRepo(b, b.TempDir())
				if out, err := exec.Command("cp", "-a", tree+"/.", repo.Dir).CombinedOutput(); err != nil {
					b.Fatalf("copy the tree: %v: %s", err, out)
				}
				for from, to := range k.files {
					data, err := os.ReadFile(filepath.Join(configBench, from))
					if err != nil {
						b.Fatal(err)
					}
					if err := os.MkdirAll(filepath.Join(repo.Dir, filepath.Dir(to)), 0o755); err != nil {
						b.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(repo.Dir, to), data, 0o644); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := repo.Commit("reference tree"); err != nil {
					b.Fatal(err)
				}
				if err := repo.Push(); err != nil {
					b.Fatal(err)
				}
				ns := namespace(b, fmt.Sprintf("bench-cfg-%s-%d", k.name, r))
				if k.cm != nil {
					if _, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
						ObjectMeta: metav1.ObjectMeta{Name: "addon-operator"}, Data: k.cm,
					}, metav1.CreateOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				start := time.Now()
				op := startOperator(b, append([]string{"ADDON_OPERATOR_NAMESPACE=" + ns, "GIT_URL=file://" + repo.Bare, "GIT_REF=main",
					"GIT_POLL_INTERVAL=1h", "GIT_CHECKOUT_DIR=" + filepath.Join(b.TempDir(), "checkout"), "LOG_TYPE=json", "LOG_LEVEL=info"}, k.env...)...)
				poll(b, k.name+": the first converge", func() bool { return convergedCount(b, op.log) > 0 })
				d := time.Since(start)
				if code, _ := get(op.addr, "/readyz"); code != http.StatusOK {
					b.Fatalf("%s: /readyz after the first converge: %d", k.name, code)
				}
				m := scrape(b, op.addr)
				if m[helmUpgrades] != n {
					b.Fatalf("%s: %v upgrades, want %d", k.name, m[helmUpgrades], n)
				}
				cm, err := client.CoreV1().ConfigMaps(ns).Get(context.Background(), "mod-aa-cm", metav1.GetOptions{})
				if err != nil || cm.Data["greeting"] != k.want {
					b.Fatalf("%s: mod-aa's greeting: %v %v, want %q", k.name, cm.Data, err, k.want)
				}
				converge[k.name] = append(converge[k.name], d)
				if r == rounds-1 {
					b.ReportMetric(1000*m[hookSum]/m[hookCount], k.name+"-hook-ms/run")
					b.ReportMetric(float64(peakRSS(op.cmd.Process.Pid))/(1<<20), k.name+"-peak-RSS-MiB")
				}
				op.stop(10 * time.Second)
			}
		}
		base := median(converge["configmap"])
		for _, k := range kinds {
			b.ReportMetric(median(converge[k.name]).Seconds(), k.name+"-converge-s")
			if k.name != "configmap" {
				b.ReportMetric(float64(median(converge[k.name]))/float64(base), k.name+"/configmap")
			}
		}
	}
}

// configMapData is config.yaml as ConfigMap data, read as the operator
// reads a config file.
func configMapData(b *testing.B) map[string]string {
	c, err := clusterconfig.Load(context.Background(), configBench, clusterconfig.Settings{
		Cluster: "bench", Layers: []clusterconfig.Layer{{Path: "config.yaml"}},
	})
	if err != nil {
		b.Fatal(err)
	}
	return c.Data
}
