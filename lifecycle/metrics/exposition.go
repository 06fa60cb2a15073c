package metrics

import (
	"bufio"
	"compress/gzip"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
)

// The compact families' series are written to a text scrape one by one:
// the registry's way (every series of every family made a message first,
// then written) held ~2 KB a histogram series for the whole scrape, so a
// scrape of 1,000 modules was the operator's peak of memory
// (docs/performance.md). A client that asks for protobuf gets the
// registry's way, created timestamps included.

// compactFamily is a compact family: a collector of the registry, and
// what the text exposition writes.
type compactFamily interface {
	prometheus.Collector
	name() string
	writeText(w *bufio.Writer)
}

// Handler serves /metrics: what reg gathers and the compact families, in
// name order, as promhttp would serve them together.
func (c Compact) Handler(reg prometheus.Gatherer) http.Handler {
	all := promhttp.HandlerFor(c.Gatherer(reg), promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	families := slices.Clone(c.families)
	slices.SortFunc(families, func(a, b compactFamily) int { return strings.Compare(a.name(), b.name()) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		format := expfmt.Negotiate(r.Header)
		encoding := negotiateEncoding(r)
		// protobuf, a filter by name[] (promhttp's), an encoding it would
		// refuse: promhttp's way
		if format.FormatType() != expfmt.TypeTextPlain || r.URL.Query().Has("name[]") || encoding == "" {
			all.ServeHTTP(w, r)
			return
		}
		mfs, err := reg.Gather()
		if err != nil && len(mfs) == 0 {
			all.ServeHTTP(w, r) // promhttp's answer to a failed gathering
			return
		}
		w.Header().Set("Content-Type", string(format))
		var out io.Writer = w
		if encoding == "gzip" {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzipPool.Get().(*gzip.Writer)
			zw.Reset(w)
			defer func() { _ = zw.Close(); gzipPool.Put(zw) }()
			out = zw
		}
		bw := bufio.NewWriterSize(out, 32<<10)
		defer bw.Flush()
		enc := expfmt.NewEncoder(bw, format)
		i := 0
		for _, mf := range mfs {
			for ; i < len(families) && families[i].name() < mf.GetName(); i++ {
				families[i].writeText(bw)
			}
			_ = enc.Encode(mf) // a write error is the client gone
		}
		for ; i < len(families); i++ {
			families[i].writeText(bw)
		}
	})
}

var gzipPool = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// negotiateEncoding is the response's encoding as promhttp negotiates it
// between identity and gzip: the offer with the highest q in
// Accept-Encoding (identity on a tie, and when none is named), "" when the
// best has q=0. Codings match exactly, and a line's parsing stops at a
// parameter other than q, as promhttp's parser does.
func negotiateEncoding(r *http.Request) string {
	type spec struct {
		value string
		q     float64
	}
	var specs []spec
	for _, line := range r.Header.Values("Accept-Encoding") {
		for _, part := range strings.Split(line, ",") {
			value, params, hasParams := strings.Cut(part, ";")
			sp := spec{strings.TrimSpace(value), 1}
			if sp.value == "" {
				break
			}
			if hasParams {
				p, ok := strings.CutPrefix(strings.TrimSpace(params), "q=")
				q, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
				if !ok || err != nil || q < 0 {
					break
				}
				sp.q = q
			}
			specs = append(specs, sp)
		}
	}
	best, bestQ := "identity", -1.0
	for _, offer := range []string{"identity", "gzip"} {
		for _, sp := range specs {
			if sp.q > bestQ && (sp.value == "*" || sp.value == offer) {
				best, bestQ = offer, sp.q
			}
		}
	}
	if bestQ == 0 {
		return ""
	}
	return best
}

func (f *family[S]) name() string { return f.fqName }

// writeText writes the family's HELP, TYPE and series, in the order of
// their label values as the registry sorts them.
func (f *family[S]) writeText(w *bufio.Writer) {
	// the series are taken under the lock and written without it: a slow
	// client must not hold up a new series (WithLabelValues waits for
	// the write lock); their numbers are atomics
	type entry struct {
		key string
		s   *S
	}
	f.mu.RLock()
	series := make([]entry, 0, len(f.series))
	for key, s := range f.series {
		series = append(series, entry{key, s})
	}
	f.mu.RUnlock()
	if len(series) == 0 {
		return // as the registry: a family without series is not written
	}
	slices.SortFunc(series, func(a, b entry) int { return f.compareKeys(a.key, b.key) })
	w.WriteString("# HELP ")
	w.WriteString(f.fqName)
	w.WriteByte(' ')
	helpEscaper.WriteString(w, f.help)
	w.WriteString("\n# TYPE ")
	w.WriteString(f.fqName)
	w.WriteByte(' ')
	w.WriteString(f.kind)
	w.WriteByte('\n')
	var buf [8]string
	for _, e := range series {
		f.text(w, f, splitKey(e.key, buf[:0]), e.s)
	}
}

// compareKeys orders two series by their label values in the order of the
// label names, as the registry orders them.
func (f *family[S]) compareKeys(a, b string) int {
	for _, i := range f.sorted {
		if c := strings.Compare(field(a, i), field(b, i)); c != 0 {
			return c
		}
	}
	return 0
}

// splitKey appends a series' label values to vals.
func splitKey(key string, vals []string) []string {
	for {
		v, rest, more := strings.Cut(key, labelSep)
		vals = append(vals, v)
		if !more {
			return vals
		}
		key = rest
	}
}

// field is the i-th label value of a series' key.
func field(key string, i int) string {
	for ; i > 0; i-- {
		_, key, _ = strings.Cut(key, labelSep)
	}
	v, _, _ := strings.Cut(key, labelSep)
	return v
}

// writeName writes the start of a sample, name{labels} and a space
// (values are the series' label values); le is a bucket's upper bound,
// written last, or "".
func (f *family[S]) writeName(w *bufio.Writer, suffix string, values []string, le string) {
	w.WriteString(f.fqName)
	w.WriteString(suffix)
	if f.labels > 0 || le != "" {
		w.WriteByte('{')
		for j, i := range f.sorted {
			if j > 0 {
				w.WriteByte(',')
			}
			w.WriteString(f.names[i])
			w.WriteString(`="`)
			writeLabelValue(w, values[i])
			w.WriteByte('"')
		}
		if le != "" {
			if f.labels > 0 {
				w.WriteByte(',')
			}
			w.WriteString(`le="`)
			w.WriteString(le)
			w.WriteByte('"')
		}
		w.WriteString("} ")
		return
	}
	w.WriteByte(' ')
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// writeLabelValue writes a label value escaped; most need no escaping,
// and the replacer allocates for each.
func writeLabelValue(w *bufio.Writer, v string) {
	if strings.ContainsAny(v, "\\\n\"") {
		valueEscaper.WriteString(w, v)
		return
	}
	w.WriteString(v)
}

// formatFloat is a sample value as the text format writes it.
func formatFloat(v float64) string {
	switch {
	case v == 1:
		return "1"
	case v == 0:
		return "0"
	case v == -1:
		return "-1"
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, +1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func writeFloat(w *bufio.Writer, v float64) {
	w.WriteString(formatFloat(v))
	w.WriteByte('\n')
}

// writeCount writes a bucket's or a histogram's count as expfmt does: as
// a float (1e+06 from a million on).
func writeCount(w *bufio.Writer, n uint64) { writeFloat(w, float64(n)) }

// the text of each kind's series

func counterText(w *bufio.Writer, f *family[counter], values []string, c *counter) {
	f.writeName(w, "", values, "")
	writeFloat(w, c.v.load())
}

func gaugeText(w *bufio.Writer, f *family[atomicFloat], values []string, g *atomicFloat) {
	f.writeName(w, "", values, "")
	writeFloat(w, g.load())
}

// histogramText writes a histogram's buckets (les are its bounds as
// written), sum and count.
func histogramText(les []string) func(w *bufio.Writer, f *family[histogram], values []string, h *histogram) {
	return func(w *bufio.Writer, f *family[histogram], values []string, h *histogram) {
		var n uint64
		for i, le := range les {
			n += h.counts[i].Load()
			f.writeName(w, "_bucket", values, le)
			writeCount(w, n)
		}
		n += h.counts[len(les)].Load()
		f.writeName(w, "_bucket", values, "+Inf")
		writeCount(w, n)
		f.writeName(w, "_sum", values, "")
		writeFloat(w, h.sum.load())
		f.writeName(w, "_count", values, "")
		writeCount(w, n)
	}
}
