package hookrun

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// MaxStatusLine bounds a message a module's script writes for /status
// (an enabled script's reason, a readiness hook's message, a settings
// check's refusal): it is a message for people, not a place for output
// (docs/security.md, "Who sees what").
const MaxStatusLine = 512

// StatusLine is s as /status shows it: its first line, trimmed, at most
// MaxStatusLine bytes, valid UTF-8.
func StatusLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if len(s) > MaxStatusLine {
		cut := MaxStatusLine
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
// (StatusLine), so /status keeps one line per module. The file
// is read like any result file (bounded, no link, no FIFO).
func readEnabledReason(module, path string) (string, error) {
	b, err := readResultFile(module+" enabled script", "MODULE_ENABLED_REASON", path)
	if err != nil {
		return "", err
	}
	return StatusLine(string(b)), nil
}

// sdkErrorMessage is the message of the last line of a module-sdk
// executable's stderr when that line is its error object; "" otherwise,
// so no other output reaches /status (docs/security.md, "Who sees what").
func sdkErrorMessage(stderr string) string {
	var e struct {
		Message string `json:"message"`
	}
	if !LastLineJSON(stderr, &e) {
		return ""
	}
	return StatusLine(e.Message)
}

// LastLineJSON decodes the last line of a module-sdk executable's stderr,
// where it writes its answer, into v; false when that line is not JSON.
func LastLineJSON(stderr string, v any) bool {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	return json.Unmarshal([]byte(strings.TrimSpace(lines[len(lines)-1])), v) == nil
}
