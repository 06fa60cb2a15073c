#!/usr/bin/env bash
# End-to-end converge timings on the reference tree (gen-modules.sh) and
# the overhead of one hook run.
set -euo pipefail
. "$(dirname "$0")/../benchlib.sh"
gobench "Converge: the reference tree against the local control plane" \
  "go test -run '^\$' -bench Converge -benchtime 1x ./cmd/addon-operator/"
cat <<'TXT'

Each row starts the real binary on `gen-modules.sh N` (N modules, each a chart with one ConfigMap
and a bash+jq beforeHelm hook; one global hook) in a fresh namespace. `converge-s`: process start
to `/readyz` 200. `reconverge-s`: an unused global key written to the ConfigMap until the reload it
causes has converged; `reconverge-upgrades`: Helm upgrades in that reload (the checksum covers the
rendered manifests, so an unused value upgrades nothing). `peak-RSS-MiB`: VmHWM of the operator
process. `hook-ms/run` and `helm-ms/module`: averages from the operator's own metrics.
TXT
echo
gobench "Overhead of one hook run" "go test -run '^\$' -bench HookRun -benchmem ./lifecycle/"
cat <<'TXT'

The same trivial `/bin/sh` hook, started directly with os/exec and run by the operator (temp
files, values JSON, environment, patch read-back); the difference is the operator's overhead.
TXT
