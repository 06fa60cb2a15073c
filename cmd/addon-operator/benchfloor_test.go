package main

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// hookFloor runs the tree's hooks directly, one after another, as a
// converge of modules of distinct weights runs them: each module's
// beforeHelm hook and the global hook, with values, binding context and
// patch files written once beforehand. Its wall time is the floor of a
// converge or a re-converge in the same run (docs/performance.md): the
// operator's own work is what the converge takes beyond it.
func hookFloor(b *testing.B, tree string) time.Duration {
	hooks, _ := filepath.Glob(filepath.Join(tree, "modules", "*", "hooks", "*.sh"))
	hooks = append(hooks, filepath.Join(tree, "global-hooks", "startup.sh"))
	dir := b.TempDir()
	files := map[string]string{
		"values.json":  `{"global":{"bench":{"param":"v1","modulesCount":` + strconv.Itoa(len(hooks)-1) + `},"enabledModules":[]}}`,
		"context.json": `[{"binding":"beforeAll"}]`,
	}
	for name, c := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(c), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	env := append(os.Environ(), "VALUES_PATH="+filepath.Join(dir, "values.json"), "CONFIG_VALUES_PATH="+filepath.Join(dir, "values.json"),
		"BINDING_CONTEXT_PATH="+filepath.Join(dir, "context.json"), "VALUES_JSON_PATCH_PATH="+filepath.Join(dir, "patch.json"))
	start := time.Now()
	for _, h := range hooks {
		cmd := exec.Command(h)
		cmd.Dir, cmd.Env = filepath.Dir(h), env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v: %s", h, err, out)
		}
	}
	return time.Since(start)
}

// families parses a reading of /metrics.
func families(t testing.TB, text string) map[string]*dto.MetricFamily {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	return mfs
}

// label is a series' value of label name.
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// stepSums are addon_operator_module_run_step_seconds' sums by step.
func stepSums(mfs map[string]*dto.MetricFamily) map[string]float64 {
	sums := map[string]float64{}
	for _, m := range mfs["addon_operator_module_run_step_seconds"].GetMetric() {
		sums[label(m, "step")] = m.GetHistogram().GetSampleSum()
	}
	return sums
}

// logSteps logs each step's milliseconds per module run between two
// readings of stepSums, in the order of the largest first.
func logSteps(b *testing.B, what string, before, after map[string]float64, runs int) {
	rows, total := deltas(before, after, func(string) bool { return true })
	// one line: a benchmark's log is cut after a few lines
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s, ms per module run by step: total=%.2f", what, 1000*total/float64(runs))
	for _, r := range rows {
		fmt.Fprintf(&sb, " %s=%.3f", r.key, 1000*r.d/float64(runs))
	}
	b.Log(sb.String())
}

// delta is one key's change between two readings.
type delta struct {
	key string
	d   float64
}

// deltas are the changes of the keys keep says yes to, the largest first,
// and their sum.
func deltas(before, after map[string]float64, keep func(string) bool) ([]delta, float64) {
	var rows []delta
	total := 0.0
	for k, v := range after {
		if keep(k) {
			rows = append(rows, delta{k, v - before[k]})
			total += v - before[k]
		}
	}
	slices.SortFunc(rows, func(x, y delta) int { return cmp.Compare(y.d, x.d) })
	return rows, total
}

// profiler takes a CPU profile and an execution trace of the operator at
// addr into $ADDON_OPERATOR_BENCH_PROFILE (nothing when it is unset), each
// $ADDON_OPERATOR_BENCH_PROFILE_SECONDS long (15 by default), at once;
// wait returns when both are written.
type profiler struct{ done chan struct{} }

func profileDir() string { return os.Getenv("ADDON_OPERATOR_BENCH_PROFILE") }

func startProfile(b *testing.B, addr, name string) profiler {
	p := profiler{done: make(chan struct{})}
	dir := profileDir()
	if dir == "" {
		close(p.done)
		return p
	}
	secs := os.Getenv("ADDON_OPERATOR_BENCH_PROFILE_SECONDS")
	if secs == "" {
		secs = "15"
	}
	// the server answers before start-up is done: wait until it listens
	poll(b, "the operator's listener", func() bool { code, _ := get(addr, "/debug/pprof/"); return code == http.StatusOK })
	errs := make(chan error, 2)
	for path, file := range map[string]string{"/debug/pprof/profile": name + ".cpu.pprof", "/debug/pprof/trace": name + ".trace"} {
		go func() {
			resp, err := http.Get("http://" + addr + path + "?seconds=" + secs)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			f, err := os.Create(filepath.Join(dir, file))
			if err == nil {
				_, err = io.Copy(f, resp.Body)
				f.Close()
			}
			errs <- err
		}()
	}
	go func() {
		for range 2 {
			if err := <-errs; err != nil {
				b.Error(err)
			}
		}
		close(p.done)
	}()
	return p
}

func (p profiler) wait() { <-p.done }

// requestsByResource counts the operator's API requests (client-go's
// latency histogram, labelled by verb and URL) by verb and resource:
// "POST secrets", "PATCH modules/status"; the key with "ms:" before it
// sums their milliseconds.
func requestsByResource(mfs map[string]*dto.MetricFamily) map[string]float64 {
	counts := map[string]float64{}
	for _, m := range mfs["addon_operator_kubernetes_client_request_latency_seconds"].GetMetric() {
		path := ""
		if u, err := url.Parse(label(m, "url")); err == nil {
			path = u.Path
		}
		key := label(m, "verb") + " " + resourceOf(path)
		counts[key] += float64(m.GetHistogram().GetSampleCount())
		counts["ms:"+key] += 1000 * m.GetHistogram().GetSampleSum()
	}
	return counts
}

// resourceOf is the resource (and subresource) a request path names.
func resourceOf(path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	// /api/v1/... or /apis/GROUP/VERSION/...
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		segs = segs[3:]
	default:
		return path
	}
	if len(segs) >= 2 && segs[0] == "namespaces" {
		if len(segs) == 2 {
			return "namespaces"
		}
		segs = segs[2:]
	}
	if len(segs) >= 3 {
		return segs[0] + "/" + segs[2]
	}
	if len(segs) >= 1 {
		return segs[0]
	}
	return path
}

// logRequests logs the requests between two readings of
// requestsByResource, per module run, the most first.
func logRequests(b *testing.B, what string, before, after map[string]float64, runs int) {
	rows, total := deltas(before, after, func(k string) bool { return !strings.HasPrefix(k, "ms:") && after[k] > before[k] })
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s, API requests: total=%.0f (%.2f per module); count, mean ms:", what, total, total/float64(runs))
	for _, r := range rows {
		ms := (after["ms:"+r.key] - before["ms:"+r.key]) / r.d
		fmt.Fprintf(&sb, " [%s]=%.0f,%.2f", r.key, r.d, ms)
	}
	b.Log(sb.String())
}
