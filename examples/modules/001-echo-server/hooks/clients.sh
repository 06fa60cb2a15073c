#!/usr/bin/env bash
# kubernetes binding: keeps echoServer.clients equal to the names of the
# namespaces labelled echo-server/client=true. The binding is in a group,
# so every run (Synchronization or event) sees the whole current list in
# its snapshots; only filter results (the names) are kept in memory.
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  cat <<'JSON'
{"configVersion":"v1","kubernetes":[{"name":"client-namespaces","group":"clients",
  "apiVersion":"v1","kind":"Namespace","labelSelector":{"matchLabels":{"echo-server/client":"true"}},
  "jqFilter":".metadata.name","keepFullObjectsInMemory":false}]}
JSON
  exit 0
fi
jq -c '[{"op":"add","path":"/echoServer/clients",
         "value":([.[-1].snapshots["client-namespaces"][].filterResult] | sort)}]' \
  "$BINDING_CONTEXT_PATH" > "$VALUES_JSON_PATCH_PATH"
