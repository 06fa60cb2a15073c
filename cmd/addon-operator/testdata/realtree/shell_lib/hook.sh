#!/usr/bin/env bash
# A hook kept in a library at the repository's root, which a module's
# hooks/ links to by the image's absolute path (/deckhouse/shell_lib/...).
if [[ "${1:-}" == "--config" ]]; then
  echo '{"configVersion":"v1","beforeHelm":20}'
  exit 0
fi
echo '[{"op":"add","path":"/frontend/internal/fromLib","value":true}]' > "$VALUES_JSON_PATCH_PATH"
