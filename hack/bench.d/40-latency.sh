#!/usr/bin/env bash
# Latency from a change to the cluster: git push + webhook, and a working-copy save.
set -euo pipefail
. "$(dirname "$0")/../benchlib.sh"
gobench "Latency: a change to the release upgraded" "go test -run '^\$' -bench Latency -benchtime 1x ./cmd/addon-operator/"
cat <<'TXT'

The real binary with one module (one ConfigMap, no hooks). `push+webhook`: a commit pushed to the
repository, then a signed `POST /hooks/git` (polling is set to 1 h), until the ConfigMap shows the
new value. `working-copy-save`: a module's values.yaml saved in a watched directory (200 ms
debounce) until the ConfigMap shows it. Median of 5; `helm-ms` is the module's own Helm time.
Target for both: ≤ 1 s plus the module's own hook and Helm time.
TXT
