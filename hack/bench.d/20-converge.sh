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
process. `hook-ms/run` and `helm-ms/module`: averages over the whole run from the operator's own
metrics; `reconverge-in-hooks-s` and `reconverge-in-helm-s`: how much of the re-converge was
spent inside hook runs (101 of them, one after another) and inside Helm steps (100, none
upgrading). The benchmark waits for each converge by reading the operator's log.
`floor-s`: the tree's hooks run directly, one after another, by the benchmark itself (before the
operator starts and after the re-converge, averaged): `converge/floor` and `reconverge/floor` are
the operator's times as ratios to the hooks of the same run, steadier than seconds on a shared
machine. `N=100,weights=10` has ten modules of each weight (`gen-modules.sh 100 --weights 10`),
which run at once. Each row also logs each module run step's milliseconds per module
(`addon_operator_module_run_step_seconds`, docs/performance.md) and the operator's API requests
by kind, with their count and mean milliseconds. `converge-api-requests` and
`reconverge-api-requests`: the operator's API requests until the first converge, and during the
re-converge (client-go's request counter); `first-release-s`: process start to the first release
applied. `peak-anon-MiB`: the most `RssAnon` seen (sampled every 50 ms), the operator's own memory
without the executable's pages that `peak-RSS-MiB` counts. The N=1000 rows take about two
minutes each (two floors of 1,001 hook runs and two converges).
TXT
echo
gobench "One-module commit against a global commit (git mode, N=100)" \
  "go test -run '^\$' -bench OneModuleCommit -benchtime 1x ./cmd/addon-operator/"
cat <<'TXT'

The real binary in git mode on `gen-modules.sh 100`, served from a local bare repository, woken by
the signed webhook. Three rounds, medians, each timed in the operator's own log from the
revision's `revision published` line: `one-module-s`, a commit that changes one module's
`values.yaml`, to that module's `helm release applied` (the module-scoped path: discovery, the
module's hook and Helm step, `afterAll`); `push-to-upgraded-s`, the same from outside: from just
before the commit is pushed to the module's upgrade; `reload-all-s`, a commit that changes the global section
of `modules/values.yaml`, to the reload's `converged` (101 hook runs and 100 Helm steps, every
release upgraded since the global parameter is rendered).
TXT
echo
gobench "One hook run: started directly and by the operator" "go test -run '^\$' -bench HookRun -benchmem ./lifecycle/"
cat <<'TXT'

Each hook started directly with os/exec (its input files written once beforehand) and run by the
operator (temp files, values JSON, environment, patch read-back and validation); the difference is
the operator's overhead. `trivial`: a `/bin/sh` hook that does nothing. `reference`: a module's
bash + jq `beforeHelm` hook from `gen-modules.sh 100`, with the values the operator hands it. A
re-converge of the reference tree runs 101 such hooks one after another (modules run one by one),
so 101 × `reference/direct-exec` is its floor on this machine.
TXT
