#!/usr/bin/env bash
# The git syncer side by side with the git CLI on one loopback server.
set -euo pipefail
. "$(dirname "$0")/../benchlib.sh"
gobench "Git: the syncer against the git CLI" "go test -run '^\$' -bench GitSideBySide -benchtime 1x ./gitsync/" vertical
cat <<'TXT'

One repository of 2000 files and 1000 commits behind `git http-backend` on loopback; each operation
5 times, alternating, medians. `clone`: our first sync (a depth-1 fetch into the kept object store,
then the tree written as a revision) against `git clone --depth 1`. `fetch`: one new commit,
ours (list refs, fetch in the same session into the kept store, and write the new revision: 1999
files hard-linked from the previous one, one written; removing the revision before that one happens
after publishing, off the critical path, and is not timed) against `git fetch` into a bare clone
(no checkout). `poll`: nothing changed, ours against `git ls-remote`; the benchmark fails
if a poll of ours sends a single object-transferring request. Ours runs in a child process so both
sides pay a process start and report peak RSS (`-MiB`) the same way; the child first resumes the
revision on disk (`Restore`, a restarted operator's one-time check of every file against its
manifest, ~20 ms for 2000 files), which a running operator does not pay per sync, so that time is
left out of `fetch` and `poll`.
TXT
