// Package metrics is the operator's own metrics on /metrics
// (docs/operator.md, "Metrics"): the original addon-operator's names with
// their labels and types, ours where it has none, the deprecated former
// names, the client-go request metrics, and the store of what hooks write
// to METRICS_PATH (served apart on /metrics/hooks). The labelled families
// are compact vectors (series.go), and /metrics writes them to a text
// scrape itself (exposition.go: Compact.Handler). It is a leaf: every
// part of the operator records through a Recorder; it imports nothing of
// the operator but loader, queue, hookmetrics and internal/executor.
package metrics
