#!/usr/bin/env bash
if [ "$1" = "--config" ]; then
  cat <<'EOF'
{"onStartup": 10, "beforeHelm": 1, "afterHelm": 2, "afterDeleteHelm": 3, "schedule": [{"name": "incremental", "crontab": "* 2 */3 * * *", "allowFailure": true}, {"crontab": "* 59 23 * * 7"}]}
EOF
  exit 0
fi
