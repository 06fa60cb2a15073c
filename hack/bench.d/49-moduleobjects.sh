#!/usr/bin/env bash
# Module objects: their writes through a converge and a re-converge, and
# what they cost the converge and its memory (on against off, one run).
set -euo pipefail
. "$(dirname "$0")/../benchlib.sh"
gobench "Module objects: writes, converge and memory (N=100)" \
  "go test -run '^\$' -bench ModuleObjects -benchtime 1x ./cmd/addon-operator/" vertical
cat <<'TXT'

BenchmarkConverge's converge and no-change re-converge of `gen-modules.sh 100`
([Converge](#converge-the-reference-tree-against-the-local-control-plane)), first with the
`modules.addonops.io` CRD deleted (the operator writes no Module objects), then with the chart's
CRD applied, in the same run ([operator.md](operator.md#module-objects)). `converge/floor` and
`reconverge/floor`: over the hook floor taken before and after in the same run (the tree's 101
hooks run directly); `converge/own-hooks`: `converge-s` over 101 × `hook-ms/run` of the same
process; `reconverge/in-hooks`: the re-converge over the time spent in its hooks.
`converge-creates`, `converge-updates`, `reconverge-creates`, `reconverge-updates`: the Module
object creates and status updates the API server took (its `apiserver_request_total`, no-op
updates included) from the operator's start to the first converge, then through the re-converge,
each counted once the writes have not moved for 3 s. Expected: about one create and one status
update per module through the first converge (a module's object is created once it runs), none
through a no-change re-converge.
TXT
