#!/usr/bin/env bash
# Runs at start-up and before every 'reload all modules'; publishes what it
# "discovers" about the cluster as global values for every module.
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  echo '{"configVersion":"v1","onStartup":10,"beforeAll":10}'
  exit 0
fi
binding=$(jq -r '.[0].binding' "$BINDING_CONTEXT_PATH")
echo "discovery for cluster $(jq -r .global.clusterName "$VALUES_PATH") (binding $binding)"
echo '[{"op":"add","path":"/global/discovery/clusterDomain","value":"cluster.local"}]' > "$VALUES_JSON_PATCH_PATH"
