#!/usr/bin/env bash
if [ "$1" = "--config" ]; then
  cat <<'EOF'
configVersion: v1
beforeHelm: 5
kubernetes:
- name: pods
  apiVersion: v1
  kind: Pod
  executeHookOnEvent: [Added, Deleted]
  executeHookOnSynchronization: false
  keepFullObjectsInMemory: false
  nameSelector: {matchNames: [a, b]}
  labelSelector: {matchLabels: {app: x}}
  fieldSelector: {matchExpressions: [{field: status.phase, operator: Equals, value: Running}]}
  namespace: {nameSelector: {matchNames: [default]}}
  jqFilter: .metadata.labels
  queue: pods
  group: g
schedule:
- name: every-second
  crontab: '*/1 * * * * *'
  includeSnapshotsFrom: [pods]
  queue: slow
EOF
  exit 0
fi
