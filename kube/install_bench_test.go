package kube

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// tripLog counts and times a client's requests by method and path.
type tripLog struct {
	mu   sync.Mutex
	by   map[string]time.Duration
	n    map[string]int
	next http.RoundTripper
}

func (l *tripLog) RoundTrip(r *http.Request) (*http.Response, error) {
	t0 := time.Now()
	resp, err := l.next.RoundTrip(r)
	if resp != nil && resp.Body != nil {
		// the body read is part of the request's time
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(b))
	}
	d := time.Since(t0)
	key := r.Method + " " + r.URL.Path
	l.mu.Lock()
	l.by[key] += d
	l.n[key]++
	l.mu.Unlock()
	return resp, err
}

// BenchmarkHelmInstall installs the reference tree's release (one
// ConfigMap, gen-modules.sh) under a new name each time and logs each
// request's count and milliseconds per install: Helm's install protocol
// against the API server, without the operator around it
// (docs/performance.md).
func BenchmarkHelmInstall(b *testing.B) {
	ns := namespace(b)
	tl := &tripLog{by: map[string]time.Duration{}, n: map[string]int{}}
	cfg := rest.CopyConfig(restCfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { tl.next = rt; return tl })
	h, err := NewHelm(cfg, ns, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	dir := testChart(b, refManifest)
	vals := func() map[string]any {
		return map[string]any{"modAa": map[string]any{"greeting": "hi", "index": 1}, "global": map[string]any{"bench": map[string]any{"param": "v1"}}}
	}
	if _, err := h.Releases(b.Context()); err != nil {
		b.Fatal(err)
	}
	if _, err := h.Upgrade(b.Context(), Release{Name: "warm", ChartDir: dir, ChartHash: "x", Values: vals(), Key: "modAa"}); err != nil {
		b.Fatal(err)
	}
	tl.mu.Lock()
	tl.by, tl.n = map[string]time.Duration{}, map[string]int{}
	tl.mu.Unlock()
	b.ResetTimer()
	for i := range b.N {
		if _, err := h.Upgrade(b.Context(), Release{Name: fmt.Sprintf("r%d", i), ChartDir: dir, ChartHash: "x", Values: vals(), Key: "modAa"}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var keys []string
	for k := range tl.by {
		if tl.n[k] >= b.N/2 { // one object's GET is a key of its own
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.Logf("%-60s n/op=%.2f ms/op=%.3f", k, float64(tl.n[k])/float64(b.N), float64(tl.by[k].Microseconds())/1000/float64(b.N))
	}
}

// refManifest is gen-modules.sh's template, one release per name.
const refManifest = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
  labels:
    app.kubernetes.io/part-of: addon-bench
data:
  greeting: {{ .Values.modAa.greeting | quote }}
  index: {{ .Values.modAa.index | quote }}
  globalParam: {{ .Values.global.bench.param | quote }}
`
