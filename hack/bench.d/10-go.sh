#!/usr/bin/env bash
# Go micro-benchmarks of the pure packages.
set -euo pipefail
gobench() { # title, package, pattern, benchtime
  local cmd="go test -run '^\$' -bench '$3' -benchmem -benchtime $4 ./$2/"
  echo "## $1"
  echo
  echo "\`$cmd\`"
  echo
  echo '```'
  eval "$cmd" 2>/dev/null | grep -E '^(Benchmark|cpu:)'
  echo '```'
}
gobench "values: merge + validate (100 modules, 20-property schemas), one hook patch" values . 2s
echo
echo "BenchmarkMergeValidate100 adopts a ConfigMap for 100 modules (validating each section against its"
echo "config schema) and computes all 100 modules' Helm values; BenchmarkHookPatch applies one module"
echo "hook's values patch and re-validates that module's values."
echo
gobench "loader: the 100-module reference tree, cold and cached" loader Load100 3x
echo
echo "Cold runs all 101 hooks with --config (a bounded pool of 2×CPUs); cached reloads the same tree,"
echo "where hook configurations are reused by content hash and only files are read and hashed."
