package hookrun

import (
	"strings"
	"testing"
)

// What a module's script writes for /status is one line, trimmed,
// bounded, valid UTF-8.
func TestStatusLine(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 400) // 800 bytes, cut inside no rune
	tests := []struct{ in, want string }{
		{"  no ingress nodes \nsecond line\n", "no ingress nodes"},
		{"first\r\nsecond", "first"},
		{"", ""},
		{long, strings.Repeat("é", MaxStatusLine/2) + "…"},
		{"a" + long, "a" + strings.Repeat("é", (MaxStatusLine-1)/2) + "…"},
		{"bad \xff byte", "bad ? byte"},
	}
	for _, tt := range tests {
		if got := StatusLine(tt.in); got != tt.want {
			t.Errorf("StatusLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A readiness hook's message is module-sdk's error object on the last
// line of its stderr, and nothing else is taken for one.
func TestSDKErrorMessage(t *testing.T) {
	t.Parallel()
	for stderr, want := range map[string]string{
		`{"message":"execute: boom"}`:               "execute: boom",
		"log line\n{\"message\":\"execute: boom\"}": "execute: boom",
		"{\"message\":\"two\\nlines\"}":             "two",
		"{\"message\":\"execute: x\"}\ntrailing":    "",
		"not json":                                  "",
		"":                                          "",
	} {
		if got := sdkErrorMessage(stderr); got != want {
			t.Errorf("sdkErrorMessage(%q) = %q, want %q", stderr, got, want)
		}
	}
}
