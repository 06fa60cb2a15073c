#!/usr/bin/env bash
if [ "$1" = "--config" ]; then
  cat <<'EOF'
{"onStartup": 1, "beforeAll": 2, "afterAll": 3, "onKubernetesEvent": [{"name": "Trigger on labels changes of Pods with myLabel:myLabelValue in any namespace", "kind": "pod", "event": ["update"], "selector": {"matchLabels": {"myLabel": "myLabelValue"}, "matchExpressions": [{"key": "tier", "operation": "In", "values": ["cache"]}]}, "namespaceSelector": {"any": true}, "jqFilter": ".metadata.labels", "allowFailure": true}]}
EOF
  exit 0
fi
