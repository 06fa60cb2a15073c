// Package benchtree generates the reference benchmark workload for tests
// and benchmarks: it finds and runs the shared generator, gen-modules.sh,
// which writes N modules (each a chart with one ConfigMap and a jq
// beforeHelm hook) and one global hook (docs/benchmarks.md).
package benchtree
