#!/usr/bin/env bash
# Partial fetch: the first sync of modules/ and global-hooks/ from a monorepo, side by side with
# git's own partial clone and with our whole fetch, on one loopback server.
set -euo pipefail
. "$(dirname "$0")/../benchlib.sh"
gobench "Git: first sync from a monorepo (partial fetch)" "go test -run '^\$' -bench Monorepo -benchtime 1x ./gitsync/" vertical
cat <<'TXT'

One commit of 50,000 files (48,000 of incompressible content under `services/`, 200 MiB of blobs;
`modules/` 2,000 files; `global-hooks/` 5), built with `git fast-import`, behind `git http-backend`
on loopback; each side 3 times, alternating, medians. `ours`: our first sync of `modules` and
`global-hooks` from the server with `uploadpack.allowFilter` and `uploadpack.allowAnySHA1InWant`
(one blob-less depth-1 fetch of the commit's trees, then the 2,005 blobs under the paths by hash,
then the revision written). `git`: `git clone --depth 1 --filter=blob:none --sparse URL` plus
`git sparse-checkout set modules global-hooks`, on the same server (times summed). `ours-whole`:
our first sync from a second server on the same repository without filtering (the whole commit).
`-KiB` is what the server sent (ref listings included); `time-ratio` and `bytes-ratio` are ours
over git's, `whole-to-partial-time` our whole fetch over our partial one. Ours runs in a child
process, so both sides pay a process start and report peak RSS (`-MiB`) the same way.
TXT
