package clusterconfig

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// BenchmarkLoad layers a 100-module config (secretfile's bench100: per
// module a flag and a section of seven values) as a plain common file and
// the same keys SOPS-encrypted in the cluster's file, as a fleet would.
func BenchmarkLoad(b *testing.B) {
	root := b.TempDir()
	for src, dst := range map[string]string{
		"../secretfile/testdata/bench100.plain.yaml": "clusters/common.yaml",
		"../secretfile/testdata/bench100.enc.yaml":   "clusters/bench/config.yaml",
	} {
		data, err := os.ReadFile(src)
		if err != nil {
			b.Fatal(err)
		}
		p := filepath.Join(root, dst)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	s := Settings{Cluster: "bench", Layers: []Layer{{Path: "clusters/common.yaml"}, {Path: DefaultPath}}, Keyring: keyring(b, keyA)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(ctx, root, s); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c, _ := Load(ctx, root, s)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(c)
	if after.HeapAlloc > before.HeapAlloc {
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc), "retained-B")
	}
	if len(c.Data) != 201 {
		b.Fatalf("%d keys", len(c.Data))
	}
}
