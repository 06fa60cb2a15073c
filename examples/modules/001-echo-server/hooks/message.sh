#!/usr/bin/env bash
# beforeHelm: builds the message the chart serves from module and global values.
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  echo '{"configVersion":"v1","beforeHelm":10}'
  exit 0
fi
jq -c '[{"op":"add","path":"/echoServer/message",
         "value":(.echoServer.greeting + " from " + .global.clusterName + "." + .global.discovery.clusterDomain)}]' \
  "$VALUES_PATH" > "$VALUES_JSON_PATCH_PATH"
