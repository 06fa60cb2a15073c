package lifecycle

import (
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// metricsHook is a global hook that writes the operations of testdata
// file-like heredocs to $METRICS_PATH on every run (onStartup, then every
// second in its own queue); with $RECORD_FILE.expire it writes only an
// expire of its group.
const metricsHook = `#!/usr/bin/env bash
if [ "${1:-}" = "--config" ]; then echo '{"configVersion":"v1","onStartup":1,"schedule":[{"name":"tick","crontab":"*/1 * * * * *","queue":"m"}]}'; exit 0; fi
if [ -e "$RECORD_FILE.expire" ]; then echo '{"group":"grp","action":"expire"}' >> "$METRICS_PATH"; exit 0; fi
cat >> "$METRICS_PATH" <<'OPS'
{"name":"t_runs_total","action":"add","value":1,"labels":{"kind":"x"}}
{"name":"t_runs_total","add":2,"labels":{"kind":"x"}}
{"name":"t_items","set":7}
{"name":"t_seconds","action":"observe","value":0.2,"buckets":[0.1,1]}
{"group":"grp","name":"t_grouped","action":"set","value":1,"labels":{"obj":"a","hook":"spoofed"}}
OPS
`

// A module hook writing a value named after its module.
func moduleMetricsHook(v string) string {
	return `#!/usr/bin/env bash
if [ "${1:-}" = "--config" ]; then echo '{"configVersion":"v1","beforeHelm":1}'; exit 0; fi
echo '{"name":"t_module","set":` + v + `}' > "$METRICS_PATH"
`
}

// hookMetrics scrapes /metrics/hooks (or /metrics) and parses it.
func (e *env) scrape(path string) map[string]*dto.MetricFamily {
	e.t.Helper()
	srv := httptest.NewServer(e.op.Handler(HTTPOptions{Namespace: e.ns}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		e.t.Fatalf("%s: %v", path, err)
	}
	return mfs
}

// series finds the metric of family name whose labels are exactly labels.
func series(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	mf := mfs[name]
	if mf == nil {
		return nil
	}
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if len(got) == len(labels) {
			same := true
			for k, v := range labels {
				same = same && got[k] == v
			}
			if same {
				return m
			}
		}
	}
	return nil
}

// Hooks' METRICS_PATH through a real operator (docs/operator.md, "Metrics
// from hooks"): add (and its shortcut), set, observe with buckets, a group
// and its expire, the hook and module labels (ours win over the hook's),
// same-named hooks of two modules kept apart, a bad line failing the run
// with its line named and nothing of it applied, and the per-hook limit.
func TestHookMetricsFile(t *testing.T) {
	t.Parallel()
	cluster(t)
	var many strings.Builder
	many.WriteString("#!/usr/bin/env bash\nif [ \"${1:-}\" = \"--config\" ]; then echo '{\"configVersion\":\"v1\",\"onStartup\":2}'; exit 0; fi\n")
	many.WriteString("for i in $(seq 1003); do echo \"{\\\"name\\\":\\\"t_many\\\",\\\"set\\\":1,\\\"labels\\\":{\\\"i\\\":\\\"$i\\\"}}\"; done > \"$METRICS_PATH\"\n")
	files := merged(map[string]string{
		"modules/values.yaml":          "global: {}\nalphaEnabled: true\nbetaEnabled: true\n",
		"global-hooks/m.sh":            metricsHook,
		"global-hooks/many.sh":         many.String(),
		"modules/001-alpha/hooks/a.sh": moduleMetricsHook("1"),
		"modules/002-beta/hooks/a.sh":  moduleMetricsHook("2"),
		"global-hooks/bad.sh": `#!/usr/bin/env bash
if [ "${1:-}" = "--config" ]; then echo '{"configVersion":"v1","schedule":[{"name":"tick","crontab":"*/1 * * * * *","queue":"bad"}]}'; exit 0; fi
printf '%s\n' '{"name":"bad_applied","set":1}' '{"name":"bad_applied","action":"inc","value":1}' > "$METRICS_PATH"
`,
	})
	e := parallelSetup(t, files, nil)
	e.start()
	e.waitReady()

	mfs := e.scrape("/metrics/hooks")
	check := func(name string, labels map[string]string, typ dto.MetricType, value func(*dto.Metric) float64, want float64) {
		t.Helper()
		m := series(mfs, name, labels)
		if m == nil {
			t.Fatalf("no %s%v on /metrics/hooks; got %v", name, labels, mfs[name])
		}
		if mfs[name].GetType() != typ || value(m) != want {
			t.Fatalf("%s%v: %v %v, want %v %v", name, labels, mfs[name].GetType(), value(m), typ, want)
		}
	}
	counter := func(m *dto.Metric) float64 { return m.GetCounter().GetValue() }
	gauge := func(m *dto.Metric) float64 { return m.GetGauge().GetValue() }
	// a run's ungrouped operations replace the hook's previous run's
	check("t_runs_total", map[string]string{"hook": "m.sh", "kind": "x"}, dto.MetricType_COUNTER, counter, 3)
	check("t_items", map[string]string{"hook": "m.sh"}, dto.MetricType_GAUGE, gauge, 7)
	check("t_seconds", map[string]string{"hook": "m.sh"}, dto.MetricType_HISTOGRAM, func(m *dto.Metric) float64 {
		h := m.GetHistogram()
		if b := h.GetBucket(); len(b) < 2 || b[0].GetCumulativeCount() != 0 || b[1].GetCumulativeCount() != 1 {
			t.Fatalf("t_seconds buckets: %v", b)
		}
		return float64(h.GetSampleCount())
	}, 1)
	check("t_grouped", map[string]string{"hook": "m.sh", "obj": "a"}, dto.MetricType_GAUGE, gauge, 1)
	check("t_module", map[string]string{"hook": "hooks/a.sh", "module": "alpha"}, dto.MetricType_GAUGE, gauge, 1)
	check("t_module", map[string]string{"hook": "hooks/a.sh", "module": "beta"}, dto.MetricType_GAUGE, gauge, 2)
	if n := len(mfs["t_many"].GetMetric()); n != 1000 {
		t.Fatalf("t_many: %d series, want the limit 1000", n)
	}
	self := e.scrape("/metrics")
	check2 := func(name string, labels map[string]string, want float64) {
		t.Helper()
		m := series(self, name, labels)
		if m == nil || m.GetCounter().GetValue() < want {
			t.Fatalf("/metrics: %s%v = %v, want %v; have %v", name, labels, m, want, self[name])
		}
	}
	check2("addon_operator_hook_metrics_dropped_series_total", map[string]string{"module": "", "hook": "many.sh"}, 3)

	// the bad line fails the run, named; nothing of that run is applied
	e.eventually("bad.sh to fail on its line 2", func() bool {
		for _, q := range e.op.Status().Queues {
			for _, tk := range q.Tasks {
				if strings.Contains(tk.LastError, "METRICS_PATH: line 2: unknown action \"inc\"") {
					return true
				}
			}
		}
		return false
	})
	self = e.scrape("/metrics")
	check2("addon_operator_global_hook_run_errors_total", map[string]string{"hook": "bad.sh", "binding": "schedule", "activation": "Schedule", "queue": "bad"}, 1)
	if mf := e.scrape("/metrics/hooks")["bad_applied"]; mf != nil {
		t.Fatalf("a failed run's metrics were applied: %v", mf)
	}

	// expire drops the group; the hook's ungrouped series stay
	if err := os.WriteFile(e.records+".expire", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.eventually("the group to expire", func() bool { return e.scrape("/metrics/hooks")["t_grouped"] == nil })
	if mfs := e.scrape("/metrics/hooks"); series(mfs, "t_items", map[string]string{"hook": "m.sh"}) == nil {
		t.Fatal("expire of grp dropped the hook's own series")
	}
}
