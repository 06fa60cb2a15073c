// Package gitsync owns where the module tree comes from: go-git clones and
// fetches of a ref (branch, tag, full ref or commit) over https, ssh and
// file://, of only the checked-out paths' files where the remote filters,
// atomic publication of each checked-out revision, credentials,
// signature checks, the poll loop and webhook trigger, live ref changes and
// the revision history; and the tree watcher (fsnotify) that reports "tree
// changed". In no-git mode it watches a plain directory instead.
package gitsync
