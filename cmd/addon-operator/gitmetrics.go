package main

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/addonops/addon-operator/gitsync"
)

// registerGitMetrics reports the git source's sync state, for the
// "git sync failing" and "git sync stale" alerts of deploy/monitoring.
func registerGitMetrics(reg prometheus.Registerer, status func() gitsync.Status) {
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "addon_operator_git_last_sync_timestamp_seconds", Help: "When the git source last asked the remote (a sync attempt, successful or not), in Unix seconds.",
		}, func() float64 {
			if t := status().LastSync; !t.IsZero() {
				return float64(t.UnixNano()) / 1e9
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "addon_operator_git_sync_failing", Help: "1 while the git source's last sync failed (the current revision keeps running), 0 otherwise.",
		}, func() float64 {
			if status().LastError != "" {
				return 1
			}
			return 0
		}),
	)
}

// heldCollector exports what holds a revision (docs/operator.md, "Suspend,
// resume and sync"), one /status read per scrape: for the "revision held"
// alert of deploy/monitoring.
type heldCollector struct {
	holds       func() []gitsync.Hold
	held, since *prometheus.Desc
}

var _ prometheus.Collector = (*heldCollector)(nil)

func newHeldCollector(holds func() []gitsync.Hold) *heldCollector {
	return &heldCollector{holds: holds,
		held: prometheus.NewDesc("addon_operator_source_held",
			"1 while a newer revision is held by that holder (suspend, window, ring, purge-guard, health-wait), the current one running on; 0 otherwise.", []string{"by"}, nil),
		since: prometheus.NewDesc("addon_operator_source_held_since_timestamp_seconds",
			"Since when that holder holds a revision, in Unix seconds; 0 while it holds none.", []string{"by"}, nil),
	}
}

func (c *heldCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.held; ch <- c.since }

func (c *heldCollector) Collect(ch chan<- prometheus.Metric) {
	since := map[string]time.Time{}
	for _, h := range c.holds() {
		if s, ok := since[h.By]; !ok || h.Since.Before(s) {
			since[h.By] = h.Since
		}
	}
	for _, by := range holders {
		held, at := 0.0, 0.0
		if s, ok := since[by]; ok {
			held, at = 1, float64(s.UnixNano())/1e9
		}
		ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, held, by)
		ch <- prometheus.MustNewConstMetric(c.since, prometheus.GaugeValue, at, by)
	}
}
