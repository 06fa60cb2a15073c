package metrics

import (
	"bufio"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Compact vectors for the series every module and hook has (the
// original's per-module names): client_golang keeps ~1.5 KB for each
// histogram series (two sets of buckets, exemplar slots, label pairs as
// protobuf messages, a created timestamp message) and ~0.5 KB for each
// counter, 25 MB of the live heap at 1,000 modules (docs/performance.md).
// These keep the label values once, joined as the series' key, and the
// numbers; each series is written straight into the exposition's message
// when /metrics is read, without the constant metric client_golang would
// build first (a scrape of 1,000 modules' series is the operator's peak of
// memory). The exposition is the same: names, help, types, buckets and
// created timestamps.

// labelSep joins label values into a key; it is not valid UTF-8, and a
// value that is not is made valid (validUTF8), so no value holds it.
const labelSep = "\xff"

// validUTF8 is v, its invalid bytes replaced: a label value comes from a
// tree (a hook's file name), and client_golang panicked on one that is
// not UTF-8.
func validUTF8(values []string) []string {
	for i, v := range values {
		if !utf8.ValidString(v) {
			values = slices.Clone(values)
			values[i] = strings.ToValidUTF8(v, "\uFFFD")
		}
	}
	return values
}

// family is one metric's series by their label values.
type family[S any] struct {
	desc         *prometheus.Desc
	fqName, help string
	kind         string // the text format's TYPE
	labels       int
	fresh        func() *S
	// text writes a series' samples to a text scrape
	text func(w *bufio.Writer, f *family[S], values []string, s *S)
	// write sets a series' value in the exposition's message
	write func(s *S, out *dto.Metric)
	// names are the label names; sorted, their indexes in order (the
	// exposition's label pairs are sorted by name)
	names  []string
	sorted []int

	mu     sync.RWMutex
	series map[string]*S
}

// with is the series of values, made at the first use, as client_golang's
// WithLabelValues (which panics on a wrong number of values, as this does).
func (f *family[S]) with(values []string) (string, *S) {
	if len(values) != f.labels {
		panic(fmt.Sprintf("%s: %d label values, want %d", f.desc, len(values), f.labels))
	}
	key := strings.Join(validUTF8(values), labelSep)
	f.mu.RLock()
	s := f.series[key]
	f.mu.RUnlock()
	if s != nil {
		return key, s
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s = f.series[key]; s == nil {
		if f.series == nil {
			f.series = map[string]*S{}
		}
		s = f.fresh()
		f.series[key] = s
	}
	return key, s
}

// handle is one series of a family, and a collector of it alone (what
// testutil reads).
type handle[S any] struct {
	f   *family[S]
	key string
	s   *S
}

// handle is the series of values (with).
func (f *family[S]) handle(values []string) handle[S] {
	key, s := f.with(values)
	return handle[S]{f, key, s}
}

func (h handle[S]) Describe(ch chan<- *prometheus.Desc) { ch <- h.f.desc }
func (h handle[S]) Collect(ch chan<- prometheus.Metric) { ch <- &seriesMetric[S]{h.f, h.key, h.s} }

// newFamily describes a metric and orders its label names.
func newFamily[S any](name, help, kind string, labels []string, fresh func() *S, write func(*S, *dto.Metric),
	text func(*bufio.Writer, *family[S], []string, *S)) family[S] {
	sorted := make([]int, len(labels))
	for i := range sorted {
		sorted[i] = i
	}
	slices.SortFunc(sorted, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	return family[S]{desc: prometheus.NewDesc(name, help, labels, nil), fqName: name, help: help, kind: kind,
		labels: len(labels), fresh: fresh, write: write, text: text, names: slices.Clone(labels), sorted: sorted}
}

// seriesMetric is one series as read by the registry.
type seriesMetric[S any] struct {
	f   *family[S]
	key string
	s   *S
}

func (m *seriesMetric[S]) Desc() *prometheus.Desc { return m.f.desc }

func (m *seriesMetric[S]) Write(out *dto.Metric) error {
	if m.f.labels > 0 {
		values := splitKey(m.key, make([]string, 0, m.f.labels))
		pairs := make([]dto.LabelPair, len(values))
		out.Label = make([]*dto.LabelPair, len(values))
		for j, i := range m.f.sorted {
			pairs[j].Name, pairs[j].Value = &m.f.names[i], &values[i]
			out.Label[j] = &pairs[j]
		}
	}
	m.f.write(m.s, out)
	return nil
}

// DeleteLabelValues drops the series of values; false if there was none.
func (f *family[S]) DeleteLabelValues(values ...string) bool {
	key := strings.Join(validUTF8(values), labelSep)
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.series[key]
	delete(f.series, key)
	return ok
}

// Reset drops every series.
func (f *family[S]) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.series = nil
}

func (f *family[S]) Describe(ch chan<- *prometheus.Desc) { ch <- f.desc }

func (f *family[S]) Collect(ch chan<- prometheus.Metric) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for key, s := range f.series {
		ch <- &seriesMetric[S]{f, key, s}
	}
}

// atomicFloat is a float64 added to and set without a lock.
type atomicFloat struct{ bits atomic.Uint64 }

func (a *atomicFloat) load() float64 { return math.Float64frombits(a.bits.Load()) }

func (a *atomicFloat) store(v float64) { a.bits.Store(math.Float64bits(v)) }

func (a *atomicFloat) add(v float64) {
	for {
		old := a.bits.Load()
		if a.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// CounterVec is a compact prometheus.CounterVec.
type CounterVec struct{ family[counter] }

type counter struct {
	v       atomicFloat
	created int64 // unix nanoseconds
}

func newCounterVec(name, help string, labels []string, now func() time.Time) *CounterVec {
	return &CounterVec{newFamily(name, help, "counter", labels,
		func() *counter { return &counter{created: now().UnixNano()} },
		func(c *counter, out *dto.Metric) {
			v := c.v.load()
			out.Counter = &dto.Counter{Value: &v, CreatedTimestamp: timestamppb.New(time.Unix(0, c.created))}
		}, counterText)}
}

// Counter is one series of a CounterVec, and a collector of it alone.
type Counter struct{ handle[counter] }

func (v *CounterVec) WithLabelValues(values ...string) Counter { return Counter{v.handle(values)} }

func (c Counter) Inc() { c.s.v.add(1) }

// Add adds v, which must not be negative (as client_golang's, which panics).
func (c Counter) Add(v float64) {
	if v < 0 {
		panic("counter cannot decrease in value")
	}
	c.s.v.add(v)
}

// GaugeVec is a compact prometheus.GaugeVec.
type GaugeVec struct{ family[atomicFloat] }

func newGaugeVec(name, help string, labels []string) *GaugeVec {
	return &GaugeVec{newFamily(name, help, "gauge", labels,
		func() *atomicFloat { return &atomicFloat{} },
		func(g *atomicFloat, out *dto.Metric) {
			v := g.load()
			out.Gauge = &dto.Gauge{Value: &v}
		}, gaugeText)}
}

// Gauge is one series of a GaugeVec, and a collector of it alone.
type Gauge struct{ handle[atomicFloat] }

func (v *GaugeVec) WithLabelValues(values ...string) Gauge { return Gauge{v.handle(values)} }

func (g Gauge) Set(v float64) { g.s.store(v) }

// HistogramVec is a compact prometheus.HistogramVec of classic buckets.
type HistogramVec struct {
	family[histogram]
	bounds []float64
}

type histogram struct {
	counts  []atomic.Uint64 // per bucket, and one past the last bound
	sum     atomicFloat
	created int64 // unix nanoseconds
}

func newHistogramVec(name, help string, bounds []float64, labels []string, now func() time.Time) *HistogramVec {
	// as client_golang: the default buckets for none, a last +Inf dropped
	// (it is the count), bounds strictly increasing
	if len(bounds) == 0 {
		bounds = prometheus.DefBuckets
	}
	if math.IsInf(bounds[len(bounds)-1], +1) {
		bounds = bounds[:len(bounds)-1]
	}
	for i := 1; i < len(bounds); i++ {
		if bounds[i] <= bounds[i-1] {
			panic(name + ": histogram buckets must be in increasing order")
		}
	}
	bounds = slices.Clone(bounds)
	les := make([]string, len(bounds))
	for i, b := range bounds {
		les[i] = formatFloat(b)
	}
	return &HistogramVec{newFamily(name, help, "histogram", labels,
		func() *histogram {
			return &histogram{counts: make([]atomic.Uint64, len(bounds)+1), created: now().UnixNano()}
		},
		func(h *histogram, out *dto.Metric) {
			// cumulative counts, one bucket per bound (+Inf is the count)
			cum := make([]uint64, len(bounds)+1)
			buckets := make([]dto.Bucket, len(bounds))
			out.Histogram = &dto.Histogram{Bucket: make([]*dto.Bucket, len(bounds)),
				CreatedTimestamp: timestamppb.New(time.Unix(0, h.created))}
			var n uint64
			for i := range bounds {
				n += h.counts[i].Load()
				cum[i] = n
				buckets[i].CumulativeCount, buckets[i].UpperBound = &cum[i], &bounds[i]
				out.Histogram.Bucket[i] = &buckets[i]
			}
			cum[len(bounds)] = n + h.counts[len(bounds)].Load()
			sum := h.sum.load()
			out.Histogram.SampleCount, out.Histogram.SampleSum = &cum[len(bounds)], &sum
		}, histogramText(les)), bounds}
}

// Histogram is one series of a HistogramVec, and a collector of it alone.
type Histogram struct {
	handle[histogram]
	bounds []float64
}

func (v *HistogramVec) WithLabelValues(values ...string) Histogram {
	return Histogram{v.handle(values), v.bounds}
}

// Observe counts v in the first bucket whose upper bound is at least v,
// as client_golang does.
func (h Histogram) Observe(v float64) {
	i := sort.SearchFloat64s(h.bounds, v) // NaN: past the last bound, as client_golang
	h.s.counts[i].Add(1)
	h.s.sum.add(v)
}
