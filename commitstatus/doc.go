// Package commitstatus owns telling the forge what became of a commit: it
// takes reports of a revision's state (applying, applied, failed; later a
// module's health) without ever blocking the caller, and posts them as
// commit statuses through one of three providers: the GitHub-compatible
// API (GitHub, Gitea, Forgejo), GitLab's, or a generic JSON webhook. A
// Notifier's one worker deduplicates per commit and context, rate-limits,
// and retries with backoff (docs/operator.md, "Commit status").
//
// It also reads a commit's statuses back (GitHub.Statuses,
// GitLab.Statuses, through a ReadCache: one read per commit per poll,
// bounded), and ParseOwn reads our own contexts and descriptions, with
// the ring a cluster posts (Options.Ring): what the ring gate of a
// fleet decides from (packages ring and rollout).
package commitstatus
