package main

import (
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
