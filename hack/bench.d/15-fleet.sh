#!/usr/bin/env bash
# A fleet's rollout: forge requests per poll, and ring 1's wait after ring 0's healthy.
set -euo pipefail
. "$(dirname "$0")/../benchlib.sh"
gobench "Fleets: forge requests per poll (50 clusters) and ring 1's apply after ring 0's healthy" \
  "go test -run '^\$' -bench . -benchtime 20x ./rollout/"
cat <<'TXT'

BenchmarkForgeReadsPerPoll is a fleet of 50 clusters (10 in ring 0, 40 in ring 1 holding one
commit) against a local forge answering GitHub's status reads (internal/forgetest), each cluster
with its own gate and `commitstatus.ReadCache` as cmd wires them; one op is a poll of the whole
fleet, each cluster asking its gate twice. `requests/cluster/poll` is 1 with the 50 revision
statuses (one page of 100), 3 with per-module statuses (300 statuses, 3 pages): one read per held
commit per poll, its pages counted ([operator.md](operator.md#fleets)). The ns/op is the HTTP
round trips of the whole fleet from one process.

BenchmarkRingApplyAfterHealthy is the time from ring 0's last `healthy` reaching the forge to ring
1's gate letting the commit through, with the gate asked at each poll of 200 ms (the interval
counted from a sync's end, as gitsync does) through a ReadCache whose TTL is the interval: the
report lands at a random instant of a poll, so the wait is about half an interval on average and
at most one interval plus a read. In a real fleet it is `GIT_POLL_INTERVAL` (default 1m) plus the
soak; the real-parts TestFleetRings logs the same figure through three operators.
TXT
