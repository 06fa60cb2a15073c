#!/usr/bin/env bash
# make run: the local control plane (unless $KUBECONFIG names a cluster).
set -euo pipefail
cd "$(dirname "$0")/.."
RUN_DIR=bin/run
mkdir -p "$RUN_DIR"
KCFG="$RUN_DIR/kubeconfig"
rm -f "$KCFG"
echo "starting the local control plane (etcd + kube-apiserver on 127.0.0.1)"
bin/devcluster --kubeconfig "$KCFG" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT INT TERM
for _ in $(seq 1 600); do
  [ -f "$KCFG" ] && break
  kill -0 "$pid" 2>/dev/null || { echo "control plane failed to start" >&2; exit 1; }
  sleep 0.1
done
cat <<MSG

The control plane is up. In another shell:
  export KUBECONFIG=$PWD/$KCFG
  kubectl get namespaces        # or any client
Press Ctrl-C to stop it.
MSG
wait "$pid"
