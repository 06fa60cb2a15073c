#!/usr/bin/env bash
# Prints the kwok configuration the test control plane runs (internal/testenv
# WithWorkloads): kwok's own stage files from its module at the pinned
# version, so nodes turn Ready, pods start, become Ready, complete and are
# deleted, and a pod labelled pod-container-running-failed.stage.kwok.x-k8s.io=true
# fails after it starts; and our own stage, kwok-never-ready.yaml.
set -euo pipefail
version=${1:?usage: kwok-stages.sh VERSION}
dir=$(cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod ${GO:-go} mod download -json "sigs.k8s.io/kwok@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$dir" ] || { echo "kwok $version not found in the module cache" >&2; exit 1; }
first=1
for f in node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml \
         pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml \
         pod/chaos/pod-container-running-failed.yaml; do
  [ $first = 1 ] || echo ---
  first=0
  cat "$dir/kustomize/stage/$f"
done
echo ---
cat "$(dirname "$0")/kwok-never-ready.yaml"
