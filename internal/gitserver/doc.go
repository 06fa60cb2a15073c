// Package gitserver is a real git server for tests: `git http-backend`
// behind net/http/cgi with optional basic or token auth, an SSH endpoint
// that runs git-upload-pack/git-receive-pack for authorized keys, and
// builders for fixture repositories with commits, branches, tags and
// pull-request refs. Every server listens on 127.0.0.1 only.
package gitserver
