#!/usr/bin/env bash
if [ "$1" = "--config" ]; then
  cat <<'EOF'
{"schedule": [{"crontab": "*/5 * * *"}]}
EOF
  exit 0
fi
