#!/usr/bin/env bash
# make run: the operator on examples/ against the local control plane, or
# against the cluster $KUBECONFIG names. Ctrl-C stops everything.
# Git mode by default: it follows this repository (file:// of the clone,
# examples/ paths). RUN_MODE=local (make run-local) watches the working
# copy instead, so unsaved-to-git edits are picked up on every save.
set -euo pipefail
cd "$(dirname "$0")/.."
RUN_DIR=bin/run
mkdir -p "$RUN_DIR"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

if [ -z "${KUBECONFIG:-}" ]; then
  KUBECONFIG="$PWD/$RUN_DIR/kubeconfig"
  rm -f "$KUBECONFIG"
  echo "starting the local control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok on 127.0.0.1)"
  # with the chart's CRDs, as helm install has them: the Module objects
  bin/devcluster --kubeconfig "$KUBECONFIG" --crds deploy/chart/addon-operator/crds > "$RUN_DIR/devcluster.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 600); do
    [ -f "$KUBECONFIG" ] && break
    kill -0 "${pids[0]}" 2>/dev/null || { cat "$RUN_DIR/devcluster.log" >&2; echo "control plane failed to start" >&2; exit 1; }
    sleep 0.1
  done
else
  echo "using the cluster of KUBECONFIG=$KUBECONFIG"
fi
export KUBECONFIG

ADDR=${ADDON_OPERATOR_LISTEN_ADDRESS:-127.0.0.1:9115}
export ADDON_OPERATOR_NAMESPACE=${ADDON_OPERATOR_NAMESPACE:-default}
export LOG_TYPE=${LOG_TYPE:-text}
if [ "${RUN_MODE:-git}" = local ]; then
  export MODULES_DIR=${MODULES_DIR:-$PWD/examples/modules}
  export GLOBAL_HOOKS_DIR=${GLOBAL_HOOKS_DIR:-$PWD/examples/global-hooks}
  echo "starting addon-operator on the working copy $MODULES_DIR (logs: $RUN_DIR/operator.log)"
else
  export GIT_URL=${GIT_URL:-file://$PWD}
  export GIT_REF=${GIT_REF:-$(git rev-parse --abbrev-ref HEAD 2>/dev/null || echo main)}
  export MODULES_DIR=${MODULES_DIR:-examples/modules}
  export GLOBAL_HOOKS_DIR=${GLOBAL_HOOKS_DIR:-examples/global-hooks}
  export GIT_CHECKOUT_DIR=${GIT_CHECKOUT_DIR:-$PWD/$RUN_DIR/git}
  export GIT_POLL_INTERVAL=${GIT_POLL_INTERVAL:-5s}
  # config in git: the dev cluster of examples/clusters (the shared file
  # under its own folder), its SOPS file decrypted with the TEST-ONLY key
  export ADDON_OPERATOR_CLUSTER_NAME=${ADDON_OPERATOR_CLUSTER_NAME:-dev}
  layers='examples/clusters/common.yaml,examples/clusters/{cluster}/'
  export ADDON_OPERATOR_CLUSTER_CONFIG=${ADDON_OPERATOR_CLUSTER_CONFIG:-$layers}
  export ADDON_OPERATOR_SOPS_KEY_FILE=${ADDON_OPERATOR_SOPS_KEY_FILE:-$PWD/examples/keys/test-only-age-key.txt}
  echo "starting addon-operator on $(echo "$GIT_URL" | sed -E 's#(https?://)[^/@]*@#\1#') ref $GIT_REF, $MODULES_DIR, cluster $ADDON_OPERATOR_CLUSTER_NAME (logs: $RUN_DIR/operator.log)"
fi
bin/addon-operator start --listen-address "$ADDR" > "$RUN_DIR/operator.log" 2>&1 &
op=$!
pids+=($op)
for _ in $(seq 1 600); do
  curl -fs "http://$ADDR/readyz" >/dev/null 2>&1 && break
  kill -0 "$op" 2>/dev/null || { tail -20 "$RUN_DIR/operator.log" >&2; echo "addon-operator stopped" >&2; exit 1; }
  sleep 0.2
done
# health settles once the Deployments are Available on kwok's node (seconds)
for _ in $(seq 1 150); do
  curl -fs "http://$ADDR/status" | jq -e '[.modules[].health.status // empty] | all(. == "Healthy" or . == "Degraded")' >/dev/null 2>&1 && break
  sleep 0.2
done
echo
echo "Converged. Modules:"
curl -fs "http://$ADDR/status" | jq -r '.modules[] | "  \(.name): \(if .enabled then "enabled" else "disabled" end), \(.state)\(if .health then ", " + .health.status else "" end)\(if .lastError then " (" + .lastError + ")" else "" end)"'
cat <<MSG

Web view: http://$ADDR/ui/ (read-only; the modules, their health and drift, the revision, the queues)

The operator keeps running and reacts to changes:
  export KUBECONFIG=$KUBECONFIG
  kubectl -n $ADDON_OPERATOR_NAMESPACE create configmap addon-operator --from-literal=echoServer='replicas: 2' --dry-run=client -o yaml | kubectl apply -f -
  kubectl -n $ADDON_OPERATOR_NAMESPACE get modules   # the Module objects; kubectl describe module/NAME shows its Events
  curl http://$ADDR/status     # modules (with their health) and queues as JSON
  bin/addon-operator module list --address http://$ADDR
  curl http://$ADDR/queue      # the task queues
  tail -f $RUN_DIR/operator.log
examples/README.md has more to try. Press Ctrl-C to stop.
MSG
if [ "${RUN_MODE:-git}" != local ]; then
  cat <<MSG
Git mode: commit a change under examples/ and it is applied within ${GIT_POLL_INTERVAL};
  bin/addon-operator source status --address http://$ADDR
The cluster's settings are examples/clusters/common.yaml and examples/clusters/$ADDON_OPERATOR_CLUSTER_NAME/
(a ConfigMap value for a key they set is config drift: reported, not applied). Preview a cluster:
  bin/addon-operator render --cluster-name prod --cluster-config '$ADDON_OPERATOR_CLUSTER_CONFIG' --modules-dir examples/modules --global-hooks-dir examples/global-hooks
make run-local follows the working copy instead (every save), with the ConfigMap alone.
MSG
fi
wait "$op"
