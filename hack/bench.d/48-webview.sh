#!/usr/bin/env bash
# The web view's first page: bytes and time to render.
set -euo pipefail
. "$(dirname "$0")/../benchlib.sh"
gobench "Web view: the first page for 100 modules" "go test -run '^\$' -bench FirstPage -benchmem ./webview/"
cat <<'TXT'

The modules page of the web view ([operator.md](operator.md#web-view)) for 100 modules, each
failing with a 200-character error, Degraded and drifted, rendered from a `/status` answer
(decoded, sorted by weight, escaped by html/template): `page-B` is the HTML, `first-page-B` with
its style sheet and script, what a browser loads first. Target: under 100 KB. The page refreshes
its main part every 2 s and gets a 304 while nothing changed.
TXT
