package metrics

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/addonops/addon-operator/internal/executor"
	"github.com/addonops/addon-operator/loader"
)

// The operator's /metrics writes the compact families itself; a text
// scrape reads what promhttp writes for the same metrics, byte for byte
// (families in name order, series in label order, escaped label values,
// buckets), gzipped or not; a protobuf scrape is promhttp's.
func TestHandlerAsPromhttp(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := New(reg, func() (string, string) { return "refs/heads/main", "abc" })
	other := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "addon_operator_git_syncs_total", Help: "Not a compact family."}, []string{"result"})
	other.WithLabelValues("ok").Add(3)
	reg.MustRegister(other)
	for _, mod := range []string{"beta", "alpha", `we"ird\mod`} {
		h := &loader.Hook{Name: "001-" + mod + "/hooks/a.sh", Module: mod}
		m.HookRan(HookRunOf(h, loader.BeforeHelm), loader.BeforeHelm, 30*time.Millisecond, &executor.Usage{User: 20 * time.Millisecond, MaxRSSBytes: 4 << 20}, nil, false)
		m.HookRan(HookRunOf(h, loader.BeforeHelm), loader.BeforeHelm, 3*time.Second, &executor.Usage{}, errors.New("exit 1"), true)
		m.HelmUpgraded(mod, ModuleActivation(false), 15*time.Millisecond, true)
		m.ModuleFailed(mod, false)
		m.ModuleRan(mod, time.Now, time.Now().Add(-time.Second))
	}
	m.module.seconds.WithLabelValues("gamma", "a\nb", "x", "ModuleRun", "main").Observe(0.01)
	m.ObserveStep("hook_exec", 25*time.Millisecond)
	// counts from a million on are written as floats (1e+06)
	m.module.seconds.WithLabelValues("gamma", "a\nb", "x", "ModuleRun", "main").s.counts[0].Add(1_000_000)
	m.ConfigDrift.WithLabelValues("global").Set(2)

	target := "/metrics"
	scrape := func(h http.Handler, header http.Header) (string, http.Header) {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, target, nil)
		req.Header = header
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		body := io.Reader(rec.Body)
		if rec.Header().Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b), rec.Header()
	}
	theirs := promhttp.HandlerFor(m.Compact.Gatherer(reg), promhttp.HandlerOpts{})
	ours := m.Compact.Handler(reg)
	for _, header := range []http.Header{{}, {"Accept-Encoding": {"gzip"}}, {"Accept": {"text/plain;version=0.0.4;q=0.9,*/*;q=0.1"}},
		{"Accept-Encoding": {"gzip;q=0.5, identity"}}, {"Accept-Encoding": {"identity;q=0.2", "GZIP; q=0.8"}}, {"Accept-Encoding": {"br"}},
		{"Accept": {"application/openmetrics-text;version=1.0.0"}}} {
		want, wantHeader := scrape(theirs, header)
		got, gotHeader := scrape(ours, header)
		if got != want {
			t.Fatalf("with %v:\n%s\npromhttp's:\n%s", header, got, want)
		}
		for _, k := range []string{"Content-Type", "Content-Encoding"} {
			if gotHeader.Get(k) != wantHeader.Get(k) {
				t.Errorf("with %v: %s %q, promhttp's %q", header, k, gotHeader.Get(k), wantHeader.Get(k))
			}
		}
		for _, s := range []string{`addon_operator_module_hook_run_seconds_bucket{activation="ModuleRun",binding="x",hook="a\nb",module="gamma",queue="main",le="0.005"} 1e+06`,
			`module="we\"ird\\mod"`, "addon_operator_git_syncs_total"} {
			if !strings.Contains(got, s) {
				t.Fatalf("with %v: no %s in\n%s", header, s, got)
			}
		}
	}
	// promhttp's filter by name
	target = "/metrics?name[]=addon_operator_module_run_seconds"
	if got, _ := scrape(ours, http.Header{}); !strings.HasPrefix(got, "# HELP addon_operator_module_run_seconds ") || strings.Contains(got, "addon_operator_git_syncs_total") {
		t.Fatalf("name[] filter: %s", got)
	}
	target = "/metrics"
	proto := http.Header{"Accept": {"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"}}
	gotProto, h := scrape(ours, proto)
	wantProto, _ := scrape(theirs, proto)
	if !strings.Contains(h.Get("Content-Type"), "protobuf") || len(gotProto) != len(wantProto) {
		t.Fatalf("protobuf scrape: %s, %d bytes; promhttp's %d", h.Get("Content-Type"), len(gotProto), len(wantProto))
	}
}

// discard is a ResponseWriter that keeps nothing of the body.
type discard struct{ h http.Header }

func (d discard) Header() http.Header       { return d.h }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

// BenchmarkScrape: one text scrape of 1,000 modules' series (one hook
// run, one Helm upgrade and one module run each), promhttp over the
// registry's messages against the operator's handler; B/op is the
// scrape's garbage, what a scrape adds to the operator's memory.
func BenchmarkScrape(b *testing.B) {
	reg := prometheus.NewRegistry()
	m := New(reg, func() (string, string) { return "", "" })
	for i := range 1000 {
		mod := "module-" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + time.Duration(i).String()
		h := &loader.Hook{Name: "001-" + mod + "/hooks/a.sh", Module: mod}
		m.HookRan(HookRunOf(h, loader.BeforeHelm), loader.BeforeHelm, 30*time.Millisecond, &executor.Usage{}, nil, false)
		m.HelmUpgraded(mod, ModuleActivation(false), 15*time.Millisecond, true)
		m.ModuleRan(mod, time.Now, time.Now().Add(-time.Second))
	}
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	for _, c := range []struct {
		name string
		h    http.Handler
	}{{"promhttp", promhttp.HandlerFor(m.Compact.Gatherer(reg), promhttp.HandlerOpts{})}, {"operator", m.Compact.Handler(reg)}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.h.ServeHTTP(discard{http.Header{}}, req)
			}
		})
	}
}

// A scrape writing to a slow client holds no lock: a new series (a hook's
// first run) is made meanwhile, not after the client has read.
func TestHandlerSlowClient(t *testing.T) {
	t.Parallel()
	v := newCounterVec("c_total", "Counted.", []string{"module"}, time.Now)
	for i := range 2000 { // well over the writer's buffer
		v.WithLabelValues(fmt.Sprintf("module-%04d", i)).Inc()
	}
	c := Compact{registry: prometheus.NewRegistry(), families: []compactFamily{v}}
	w := &blockedWriter{h: http.Header{}, writing: make(chan struct{}), release: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Handler(prometheus.NewRegistry()).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	}()
	<-w.writing // the scrape is blocked in a write
	made := make(chan struct{})
	go func() {
		v.WithLabelValues("new-module").Inc()
		close(made)
	}()
	select {
	case <-made:
	case <-time.After(5 * time.Second):
		t.Error("a new series waited for the slow client")
	}
	close(w.release)
	<-done
}

// blockedWriter blocks its first Write until released.
type blockedWriter struct {
	h                http.Header
	once             sync.Once
	writing, release chan struct{}
}

func (b *blockedWriter) Header() http.Header { return b.h }
func (b *blockedWriter) WriteHeader(int)     {}
func (b *blockedWriter) Write(p []byte) (int, error) {
	b.once.Do(func() { close(b.writing); <-b.release })
	return len(p), nil
}

// A collector registered under a compact family's name is refused, as it
// was when the family was in the registry.
func TestCompactNamesTaken(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	New(reg, func() (string, string) { return "", "" })
	err := reg.Register(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "addon_operator_module_run_errors_total", Help: "x"}, []string{"module"}))
	if err == nil {
		t.Fatal("a second addon_operator_module_run_errors_total was registered")
	}
}
