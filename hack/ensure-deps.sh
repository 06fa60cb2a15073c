#!/usr/bin/env bash
# Installs the system tools the operator's tests and examples use, when
# missing: git (the test git server runs `git http-backend`), curl (make run), jq (example
# and benchmark hooks), GNU time (peak RSS in the git benchmark), prometheus
# (promtool and Prometheus for the deploy/monitoring tests), chromium (headless, for the
# web view's browser tests in cmd/addon-operator). Idempotent; needs root only when it installs.
set -euo pipefail
missing=()
command -v git >/dev/null || missing+=(git)
command -v jq >/dev/null || missing+=(jq)
command -v curl >/dev/null || missing+=(curl)
[ -x /usr/bin/time ] || missing+=(time)
command -v promtool >/dev/null || missing+=(prometheus)
command -v chromium >/dev/null || command -v chromium-browser >/dev/null || missing+=(chromium)
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
echo "installing: ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
command -v apt-get >/dev/null || { echo "apt-get not found: install ${missing[*]} with your system's package manager" >&2; exit 1; }
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}"
