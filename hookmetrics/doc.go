// Package hookmetrics holds the metrics hooks write to $METRICS_PATH and
// serves them on /metrics/hooks (docs/operator.md, "Metrics from hooks").
//
// Parse reads one run's file (JSON objects, one operation each, as
// shell-operator's format: set, add, observe with buckets, group and
// expire, and the "set"/"add" shortcut fields); Store.Apply applies a
// successful run's operations with the hook's own labels; Store is a
// prometheus.Collector. Each hook owns at most Store's limit of series:
// new series beyond it are dropped and reported, so a hook cannot grow the
// operator's memory or a scrape without bound.
package hookmetrics
