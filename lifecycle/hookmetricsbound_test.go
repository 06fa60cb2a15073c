package lifecycle

import (
	"strings"
	"testing"

	"github.com/addonops/addon-operator/hookmetrics"
)

// Hook metrics are bounded in bytes and leave with their hook
// (docs/operator.md, "Metrics from hooks"): a hook writing 900 series of
// 1000-byte labels keeps what fits its executable's 1 MiB budget, the rest
// dropped and counted; a label value past MaxValueBytes fails the run,
// naming its line; once the hook leaves the tree its series are gone from
// /metrics/hooks and another hook's stay.
func TestHookMetricsBoundedAndRetained(t *testing.T) {
	t.Parallel()
	cluster(t)
	huge := "#!/usr/bin/env bash\n" +
		`if [ "${1:-}" = "--config" ]; then echo '{"configVersion":"v1","onStartup":1}'; exit 0; fi` + "\n" +
		`v=$(printf 'x%.0s' $(seq 1000))` + "\n" +
		`for i in $(seq 900); do echo "{\"name\":\"t_huge\",\"set\":1,\"labels\":{\"i\":\"$i\",\"v\":\"$v\"}}"; done > "$METRICS_PATH"` + "\n"
	long := "#!/usr/bin/env bash\n" +
		`if [ "${1:-}" = "--config" ]; then echo '{"configVersion":"v1","schedule":[{"name":"tick","crontab":"*/1 * * * * *","queue":"long"}]}'; exit 0; fi` + "\n" +
		`v=$(printf 'x%.0s' $(seq 2000))` + "\n" +
		`echo '{"name":"t_short","set":1}' > "$METRICS_PATH"` + "\n" +
		`echo "{\"name\":\"t_long\",\"set\":1,\"labels\":{\"v\":\"$v\"}}" >> "$METRICS_PATH"` + "\n"
	keep := "#!/usr/bin/env bash\n" +
		`if [ "${1:-}" = "--config" ]; then echo '{"configVersion":"v1","onStartup":1}'; exit 0; fi` + "\n" +
		`echo '{"name":"t_keep","set":1}' > "$METRICS_PATH"` + "\n"
	files := map[string]string{
		"modules/values.yaml":  "global: {}\n",
		"global-hooks/huge.sh": huge,
		"global-hooks/long.sh": long,
		"global-hooks/keep.sh": keep,
	}
	e := parallelSetup(t, files, nil)
	e.start()
	e.waitReady()

	mfs := e.scrape("/metrics/hooks")
	n := len(mfs["t_huge"].GetMetric())
	if n == 0 || n >= 900 {
		t.Fatalf("t_huge: %d series, want fewer than 900 (the 1 MiB budget)", n)
	}
	if got := e.op.metrics.HookStore.Bytes(); got > hookmetrics.DefaultBytes*2 {
		t.Fatalf("store holds %d bytes", got)
	}
	self := e.scrape("/metrics")
	if m := series(self, "addon_operator_hook_metrics_dropped_series_total", map[string]string{"module": "", "hook": "huge.sh"}); m == nil || int(m.GetCounter().GetValue()) != 900-n {
		t.Fatalf("dropped: %v, want %d", m, 900-n)
	}
	e.eventually("long.sh to fail on its line 2", func() bool {
		for _, q := range e.op.Status().Queues {
			for _, tk := range q.Tasks {
				if strings.Contains(tk.LastError, "METRICS_PATH: line 2: t_long: label v: a value of 2000 bytes") {
					return true
				}
			}
		}
		return false
	})
	if mfs := e.scrape("/metrics/hooks"); mfs["t_long"] != nil || mfs["t_short"] != nil {
		t.Fatal("a run with a label past the bound applied its metrics")
	}

	// huge.sh leaves the tree: its series go, keep.sh's stay
	next := map[string]string{"modules/values.yaml": "global: {}\n", "global-hooks/keep.sh": keep}
	e.op.TreeChanged(e.checked("1111111111111111111111111111111111111111", next))
	e.eventually("huge.sh's series to leave /metrics/hooks", func() bool { return e.scrape("/metrics/hooks")["t_huge"] == nil })
	if mfs := e.scrape("/metrics/hooks"); series(mfs, "t_keep", map[string]string{"hook": "keep.sh"}) == nil {
		t.Fatalf("keep.sh's series left with the tree change: %v", mfs)
	}
}
