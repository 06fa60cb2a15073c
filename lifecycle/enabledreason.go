package lifecycle

import (
	"strings"
	"unicode/utf8"
)

// maxStatusLine bounds a message a module's script writes for /status
// (an enabled script's reason, a readiness hook's message): it is a
// message for people, not a place for output (docs/security.md, "Who sees
// what").
const maxStatusLine = 512

// statusLine is s as /status shows it: its first line, trimmed, at most
// maxStatusLine bytes, valid UTF-8.
func statusLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if len(s) > maxStatusLine {
		cut := maxStatusLine
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// readEnabledReason reads what an enabled script that answered false wrote
// to MODULE_ENABLED_REASON, as the original reads it (flant/addon-operator
// #636): trimmed, here also its first line alone and bounded
// (statusLine), so /status keeps one line per module. The file
// is read like any result file (bounded, no link, no FIFO).
func readEnabledReason(module, path string) (string, error) {
	b, err := readResultFile(module+" enabled script", "MODULE_ENABLED_REASON", path)
	if err != nil {
		return "", err
	}
	return statusLine(string(b)), nil
}
