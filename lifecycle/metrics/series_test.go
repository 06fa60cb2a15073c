package metrics

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// The compact vectors expose what client_golang's do for the same
// operations: names, help, types, label values, bucket counts, sums, and
// a created timestamp on counters and histograms.
func TestSeriesAsClientGolang(t *testing.T) {
	t.Parallel()
	labels := []string{"module", "hook"}
	bounds := []float64{0.005, 0.01, 0.025, 0.05, 0.1}
	cases := []struct {
		name         string
		theirs, ours prometheus.Collector
		do           func(theirs, ours prometheus.Collector)
	}{
		{"counter",
			prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total", Help: "Counted."}, labels),
			newCounterVec("c_total", "Counted.", labels, time.Now),
			func(a, b prometheus.Collector) {
				for _, v := range []float64{1, 2.5, 0} {
					a.(*prometheus.CounterVec).WithLabelValues("alpha", "hooks/a.sh").Add(v)
					b.(*CounterVec).WithLabelValues("alpha", "hooks/a.sh").Add(v)
				}
				a.(*prometheus.CounterVec).WithLabelValues("beta", "")
				b.(*CounterVec).WithLabelValues("beta", "")
				a.(*prometheus.CounterVec).WithLabelValues("gone", "x").Inc()
				b.(*CounterVec).WithLabelValues("gone", "x").Inc()
				a.(*prometheus.CounterVec).DeleteLabelValues("gone", "x")
				b.(*CounterVec).DeleteLabelValues("gone", "x")
			}},
		{"gauge",
			prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "g", Help: "Gauged."}, labels),
			newGaugeVec("g", "Gauged.", labels),
			func(a, b prometheus.Collector) {
				a.(*prometheus.GaugeVec).WithLabelValues("alpha", "b").Set(3)
				b.(*GaugeVec).WithLabelValues("alpha", "b").Set(3)
				a.(*prometheus.GaugeVec).WithLabelValues("alpha", "b").Set(-1.5)
				b.(*GaugeVec).WithLabelValues("alpha", "b").Set(-1.5)
			}},
		{"histogram",
			prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "h_seconds", Help: "Timed.", Buckets: bounds}, labels),
			newHistogramVec("h_seconds", "Timed.", bounds, labels, time.Now),
			func(a, b prometheus.Collector) {
				// on a bound, between, below the first, past the last
				for _, v := range []float64{0.01, 0.007, 0, 0.003, 5, 0.1, math.Inf(1)} {
					a.(*prometheus.HistogramVec).WithLabelValues("alpha", "hooks/a.sh").Observe(v)
					b.(*HistogramVec).WithLabelValues("alpha", "hooks/a.sh").Observe(v)
				}
				a.(*prometheus.HistogramVec).WithLabelValues("beta", "x").Observe(0.02)
				b.(*HistogramVec).WithLabelValues("beta", "x").Observe(0.02)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.do(c.theirs, c.ours)
			want, wantCreated := exposition(t, c.theirs)
			got, gotCreated := exposition(t, c.ours)
			if got != want {
				t.Fatalf("exposition:\n%s\nclient_golang's:\n%s", got, want)
			}
			if gotCreated != wantCreated {
				t.Fatalf("%d series with a created timestamp, client_golang's %d", gotCreated, wantCreated)
			}
		})
	}
}

// exposition is a collector's text exposition, and how many of its series
// carry a created timestamp (served in the protobuf format).
func exposition(t *testing.T, c prometheus.Collector) (string, int) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	created := 0
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
		for _, m := range mf.Metric {
			if ts := createdOf(m); ts != nil && ts.AsTime().After(time.Unix(0, 0)) {
				created++
			}
		}
	}
	return buf.String(), created
}

func createdOf(m *dto.Metric) interface{ AsTime() time.Time } {
	switch {
	case m.Counter != nil && m.Counter.CreatedTimestamp != nil:
		return m.Counter.CreatedTimestamp
	case m.Histogram != nil && m.Histogram.CreatedTimestamp != nil:
		return m.Histogram.CreatedTimestamp
	}
	return nil
}

// One series reads as a collector of its own (testutil.ToFloat64), Reset
// drops all, and a wrong number of label values panics, as client_golang's.
func TestSeriesHandles(t *testing.T) {
	t.Parallel()
	v := newCounterVec("c_total", "Counted.", []string{"module"}, time.Now)
	v.WithLabelValues("a").Add(2)
	v.WithLabelValues("b").Inc()
	if got := testutil.ToFloat64(v.WithLabelValues("a")); got != 2 {
		t.Fatalf("a: %v", got)
	}
	g := newGaugeVec("g", "Gauged.", []string{"module"})
	g.WithLabelValues("a").Set(7)
	if got := testutil.ToFloat64(g.WithLabelValues("a")); got != 7 {
		t.Fatalf("gauge a: %v", got)
	}
	if n := testutil.CollectAndCount(v); n != 2 {
		t.Fatalf("%d series, want 2", n)
	}
	v.Reset()
	if n := testutil.CollectAndCount(v); n != 0 {
		t.Fatalf("%d series after Reset", n)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("two label values for one label: no panic")
		}
	}()
	v.WithLabelValues("a", "b")
}

// BenchmarkSeriesMemory: the live heap of one histogram series (a module
// hook's five labels, the operator's buckets), client_golang's against
// the compact vector's.
func BenchmarkSeriesMemory(b *testing.B) {
	labels := []string{"module", "hook", "binding", "activation", "queue"}
	const n = 2000
	for _, kind := range []string{"client_golang", "compact"} {
		b.Run(kind, func(b *testing.B) {
			for b.Loop() {
				var observe func(lv ...string)
				var keep any
				switch kind {
				case "client_golang":
					v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "h", Help: "h", Buckets: buckets}, labels)
					observe, keep = func(lv ...string) { v.WithLabelValues(lv...).Observe(0.02) }, v
				default:
					v := newHistogramVec("h", "h", buckets, labels, time.Now)
					observe, keep = func(lv ...string) { v.WithLabelValues(lv...).Observe(0.02) }, v
				}
				names := make([]string, n)
				for i := range names {
					names[i] = fmt.Sprintf("module-%04d", i)
				}
				before := liveHeap()
				for _, name := range names {
					observe(name, "hooks/before-helm.sh", "beforeHelm", "ModuleRun", "main")
				}
				b.ReportMetric(float64(liveHeap()-before)/n, "B/series")
				runtime.KeepAlive(keep)
			}
		})
	}
}

func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// BenchmarkSeriesGather: one reading of 2,000 histogram series by the
// registry (what /metrics does before it writes them), client_golang's
// against the compact vector's; B/op is the reading's garbage.
func BenchmarkSeriesGather(b *testing.B) {
	labels := []string{"module", "hook", "binding", "activation", "queue"}
	for _, kind := range []string{"client_golang", "compact"} {
		b.Run(kind, func(b *testing.B) {
			reg := prometheus.NewRegistry()
			var observe func(lv ...string)
			switch kind {
			case "client_golang":
				v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "h", Help: "h", Buckets: buckets}, labels)
				reg.MustRegister(v)
				observe = func(lv ...string) { v.WithLabelValues(lv...).Observe(0.02) }
			default:
				v := newHistogramVec("h", "h", buckets, labels, time.Now)
				reg.MustRegister(v)
				observe = func(lv ...string) { v.WithLabelValues(lv...).Observe(0.02) }
			}
			for i := range 2000 {
				observe(fmt.Sprintf("module-%04d", i), "hooks/before-helm.sh", "beforeHelm", "ModuleRun", "main")
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := reg.Gather(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A label value that is not UTF-8 (a hook file's name from a tree) is
// served with its invalid bytes replaced: no panic, and no series split
// on the key's separator.
func TestSeriesInvalidUTF8(t *testing.T) {
	t.Parallel()
	v := newCounterVec("c_total", "Counted.", []string{"module", "hook"}, time.Now)
	v.WithLabelValues("a\xffb", "hooks/\xff.sh").Inc()
	v.WithLabelValues("a\xffb", "hooks/\xff.sh").Inc()
	want := "# HELP c_total Counted.\n# TYPE c_total counter\nc_total{hook=\"hooks/\uFFFD.sh\",module=\"a\uFFFDb\"} 2\n"
	if got, _ := exposition(t, v); got != want {
		t.Fatalf("exposition:\n%s\nwant:\n%s", got, want)
	}
}
