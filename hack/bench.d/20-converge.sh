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
process. `hook-ms/run` and `helm-ms/module`: averages from the operator's own metrics. While it
waits for a re-converge the benchmark reads `/metrics` every 50 ms.
TXT
echo
echo "## The reference hook run directly (the floor of a re-converge)"
echo
tree=$(mktemp -d)
bash ../shared/bench/gen-modules.sh 1 "$tree" >/dev/null
hook=$(ls "$tree"/modules/001-*/hooks/values.sh)
echo '{"global":{"bench":{"param":"v1"}},"modAa":{"greeting":"x","index":1}}' > "$tree/values.json"
start=$(date +%s%N)
for _ in $(seq 50); do VALUES_PATH="$tree/values.json" VALUES_JSON_PATCH_PATH="$tree/patch.json" "$hook"; done
end=$(date +%s%N)
echo "\`for i in \$(seq 50); do values.sh; done\`: $(awk "BEGIN { printf \"%.1f\", ($end - $start) / 50 / 1e6 }") ms per run"
rm -rf "$tree"
cat <<'TXT'

One module's `beforeHelm` hook of `gen-modules.sh`, started 50 times from the shell with the same
inputs. A re-converge runs 100 of them one after another (modules run one by one), so 100 × this is
its floor on this machine.
TXT
echo
gobench "Overhead of one hook run" "go test -run '^\$' -bench HookRun -benchmem ./lifecycle/"
cat <<'TXT'

The same trivial `/bin/sh` hook, started directly with os/exec and run by the operator (temp
files, values JSON, environment, patch read-back); the difference is the operator's overhead.
TXT
