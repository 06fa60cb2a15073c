// Package gitserver is a real git server for tests: `git http-backend`
// behind net/http/cgi with optional basic or token auth and partial
// fetches (WithFilter), counting requests and bytes sent, an SSH endpoint
// that runs git-upload-pack/git-receive-pack for authorized keys, and
// builders for fixture repositories with commits, branches, tags and
// pull-request refs. Every server listens on 127.0.0.1 only.
//
// It can also misbehave as a faulty or hostile remote would: the HTTP
// server answers upload-pack itself with packs that lack chosen objects
// (HTTPServer.Omit), and Repo.CommitTree serves trees git's own commands
// refuse to write (names holding "/", "..", ".git", duplicates).
package gitserver
