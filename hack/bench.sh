#!/usr/bin/env bash
# make bench: Go benchmarks and end-to-end timings, written with the
# commands that produced them to docs/benchmarks.md. Sections come from
# hack/bench.d/*.sh in order; each prints Markdown.
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/benchmarks.md
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
  echo "# Benchmarks"
  echo
  echo "Written by \`make bench\` on $(date -u +%Y-%m-%d) ($(nproc) cores, $(go version | cut -d' ' -f3))."
  echo "Absolute times on these machines are noisy; compare figures from the same run."
  for section in hack/bench.d/*.sh; do
    echo
    bash "$section"
  done
} > "$tmp"
mkdir -p docs
mv "$tmp" "$out"
trap - EXIT
echo "wrote $out"
