#!/usr/bin/env bash
# The operator's metrics: a series' memory, a scrape's garbage, a release record's encoding.
set -euo pipefail
. "$(dirname "$0")/../benchlib.sh"
gobench "Metrics: memory of a module hook's histogram series, and one scrape of 1,000 modules" \
  "go test -run '^\$' -bench 'SeriesMemory|SeriesGather|Scrape' -benchtime 10x ./lifecycle/metrics/"
gobench "Release records: one record's encoding with the reused gzip writer" \
  "go test -run '^\$' -bench EncodeRecord -benchtime 200x ./kube/"
cat <<'TXT'

BenchmarkSeriesMemory is the live heap of one histogram series with a module hook's five labels
and the operator's buckets (2,000 series), client_golang's HistogramVec against the compact vector
the operator keeps its per-module families in (`B/series`). BenchmarkSeriesGather is one registry
reading of 2,000 such series (B/op: its garbage). BenchmarkScrape is one text scrape of 1,000
modules' series (a hook run, a Helm upgrade and a module run each), promhttp over the registry
against the operator's `/metrics` handler, which writes the compact families itself; B/op is what
a scrape adds to the operator's memory while it runs ([performance.md](performance.md#the-third-round-garbage-metrics-and-the-scrape-issue-35)).
BenchmarkEncodeRecord encodes one release record as Helm stores it (JSON, gzip at
BestCompression, base64) with the one reused writer; Helm's own driver makes a new ~760 KB writer
for each record.
TXT
