// Package gitsync owns where the module tree comes from: go-git clones and
// fetches of a ref (branch, tag, full ref or commit) over https, ssh and
// file://, of only the checked-out paths' files where the remote filters,
// atomic publication of each checked-out revision, credentials,
// signature checks, the poll loop and webhook trigger, live ref changes and
// the revision history; and the tree watcher (fsnotify) that reports "tree
// changed". In no-git mode it watches a plain directory instead.
//
// Its parts, each one job, meet through small interfaces declared where
// they are used (docs/architecture.md, "gitsync"):
//   - Syncer: the sync loop and its decisions (poll, trigger, ref changes
//     and pinning, validation, publishing, Restore);
//   - fetcher: the remote's refs, fetches, partial fetches and the pack
//     budgets, with dropped (what fetches left out for the limits);
//   - objectStore: the bare repository on disk (repo.git);
//   - planner and checkoutWriter: a revision's plan (limits, names, links)
//     and its files on disk, with their manifests;
//   - history: the current link and history.json.
package gitsync
