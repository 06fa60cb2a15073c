#!/usr/bin/env bash
# A shell hook beside Go sources and their tests, as in Deckhouse's modules.
if [[ "${1:-}" == "--config" ]]; then
  echo '{"configVersion":"v1","beforeHelm":10}'
  exit 0
fi
echo '[{"op":"add","path":"/frontend/internal/ready","value":true}]' > "$VALUES_JSON_PATCH_PATH"
