#!/usr/bin/env bash
# afterHelm, written as for the original addon-operator (shell-operator's
# files): a gauge on /metrics/hooks through $METRICS_PATH, and a ConfigMap
# echo-server-report kept up to date through $KUBERNETES_PATCH_PATH (applied
# by the operator after the hook exits, under its ServiceAccount).
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  echo '{"configVersion":"v1","afterHelm":10}'
  exit 0
fi
clients=$(jq '.echoServer.clients // [] | length' "$VALUES_PATH")
jq -nc --argjson n "$clients" '{"name":"echo_server_clients","action":"set","value":$n}' >> "$METRICS_PATH"
# the operator's namespace (its Role lets it write ConfigMaps there): from
# its environment under `make run`, from the ServiceAccount in a pod
ns=${ADDON_OPERATOR_NAMESPACE:-$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace 2>/dev/null || echo default)}
jq -nc --arg ns "$ns" --argjson n "$clients" \
  '{"operation":"CreateOrUpdate","object":{"apiVersion":"v1","kind":"ConfigMap",
    "metadata":{"name":"echo-server-report","namespace":$ns},"data":{"clients":($n|tostring)}}}' >> "$KUBERNETES_PATCH_PATH"
