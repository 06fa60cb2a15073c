// Package forgetest is a forge for tests: an HTTP server on 127.0.0.1
// that speaks the commit status APIs the commitstatus package posts to
// (GitHub-compatible under /github, GitLab's under /gitlab, a JSON
// webhook at /webhook), checks their paths, tokens, bodies and
// signatures as the real ones would, records what it accepted, and can
// be told to fail the next requests. It answers reads of a commit's
// statuses too (GitHub's combined status, Gitea's, GitLab's list), from
// what it accepted and what a test injects, paginated as each forge
// paginates.
package forgetest
