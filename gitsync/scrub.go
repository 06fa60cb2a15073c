package gitsync

import (
	"regexp"
	"strings"
)

// Scrub removes credentials from the URLs in a string (an error message, a
// log line, a remote URL): the user info of any URL whatever its scheme's
// case, but an ssh URL keeps its login name, which is no secret and tells
// which account connects (its password part goes). scp-like addresses
// (git@host:path) carry no password and stay as they are.
func Scrub(s string) string {
	return userinfoRe.ReplaceAllStringFunc(s, scrubUserinfo)
}

// userinfoRe matches a scheme and the user info after it: everything up to
// the last '@' before the authority ends ('/', '?', '#' or white space),
// so a password with an unescaped '@' goes whole. It does not reach past
// the authority, so each URL of a message is matched on its own and an
// '@' in a path is left alone.
var userinfoRe = regexp.MustCompile(`(?i)[a-z][a-z0-9+.-]*://[^\s/?#]*@`)

// scrubUserinfo rewrites one match of userinfoRe.
func scrubUserinfo(m string) string {
	scheme, userinfo, _ := strings.Cut(strings.TrimSuffix(m, "@"), "://")
	if !sshScheme(scheme) {
		// an http user name may be the token itself
		return scheme + "://"
	}
	login, _, _ := strings.Cut(userinfo, ":")
	return scheme + "://" + login + "@"
}

func sshScheme(scheme string) bool {
	switch strings.ToLower(scheme) {
	case "ssh", "git+ssh", "ssh+git":
		return true
	}
	return false
}

// scrubbed is an error whose message is scrubbed; errors.Is and errors.As
// still reach the original.
type scrubbed struct{ error }

func (e scrubbed) Error() string { return Scrub(e.error.Error()) }
func (e scrubbed) Unwrap() error { return e.error }

func scrubErr(err error) error { return scrubbed{err} }
