#!/usr/bin/env bash
# The cost of config in git and of SOPS decryption on a 100-module converge.
set -euo pipefail
. "$(dirname "$0")/../benchlib.sh"
gobench "Config in git: settings in the ConfigMap, in git, SOPS-encrypted in git (N=100)" \
  "go test -run '^\$' -bench ConfigInGit -benchtime 1x ./cmd/addon-operator/" vertical
cat <<'TXT'

The real binary in git mode on `gen-modules.sh 100`, the same settings (each module's greeting,
its flag, the global section) three ways, alternated in one run, two rounds each (medians):
`configmap`, the settings in the values ConfigMap and no cluster name; `git`, the same settings in
`clusters/bench/config.yaml` (`ADDON_OPERATOR_CLUSTER_NAME=bench`); `sops`, the flags there and the
100 greetings in `clusters/bench/secrets.yaml`, SOPS-encrypted for an age key the operator reads
from a file. `*-converge-s`: process start to the first `converged`; `git/configmap` and
`sops/configmap`: the converge as a ratio to the ConfigMap's in the same run; `*-hook-ms/run`: the
hooks' mean run time in that process (the floor every converge sits on); `*-peak-RSS-MiB`: VmHWM.
TXT
