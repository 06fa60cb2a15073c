#!/usr/bin/env bash
# Go micro-benchmarks of the pure packages.
set -euo pipefail
. "$(dirname "$0")/../benchlib.sh"
gobench "values: merge + validate (100 modules, 20-property schemas), one hook patch" \
  "go test -run '^\$' -bench . -benchmem -benchtime 2s ./values/"
cat <<'TXT'

BenchmarkMergeValidate100 adopts a ConfigMap for 100 modules (validating each section against its
config schema) and computes all 100 modules' Helm values; BenchmarkHookPatch applies one module
hook's values patch and re-validates that module's values.

TXT
gobench "loader: the 100-module reference tree, cold and cached" \
  "go test -run '^\$' -bench Load100 -benchmem -benchtime 3x ./loader/"
cat <<'TXT'

Cold runs all 101 hooks with --config (a bounded pool of 2×CPUs); cached reloads the same tree,
where hook configurations are reused by content hash and only files are read and hashed.
TXT
