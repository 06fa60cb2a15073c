package gitsync

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestScrubForms(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "http", in: "http://alice:s3cret@git.example.com/x.git", want: "http://git.example.com/x.git"},
		{name: "https", in: "https://alice:s3cret@git.example.com/x.git", want: "https://git.example.com/x.git"},
		{name: "upper-case scheme", in: "HTTPS://alice:s3cret@git.example.com/x.git", want: "HTTPS://git.example.com/x.git"},
		{name: "mixed-case scheme", in: "Https://alice:s3cret@git.example.com/x.git", want: "Https://git.example.com/x.git"},
		{name: "mixed-case http", in: "hTTp://alice:s3cret@host/x.git", want: "hTTp://host/x.git"},
		{name: "token without a password part", in: "https://ghp_T0KEN@github.com/o/r.git", want: "https://github.com/o/r.git"},
		{name: "upper-case, token only", in: "HTTPS://ghp_T0KEN@github.com/o/r.git", want: "HTTPS://github.com/o/r.git"},
		{name: "in an error message", in: `fetch HTTPS://alice:s3cret@host/x.git: authentication required`, want: `fetch HTTPS://host/x.git: authentication required`},
		{name: "quoted by net/http", in: `Get "https://alice:s3cret@host/x.git/info/refs?service=git-upload-pack": EOF`, want: `Get "https://host/x.git/info/refs?service=git-upload-pack": EOF`},
		{name: "followed by punctuation", in: "see https://alice:s3cret@host.", want: "see https://host."},
		{name: "followed by a parenthesis", in: "(https://alice:s3cret@host)", want: "(https://host)"},
		{name: "followed by a comma", in: "https://alice:s3cret@host/x.git, retrying", want: "https://host/x.git, retrying"},
		{name: "port", in: "https://alice:s3cret@host:8443/x.git", want: "https://host:8443/x.git"},
		{name: "query and fragment", in: "https://alice:s3cret@host?a=b#c", want: "https://host?a=b#c"},
		{name: "@ in the password", in: "https://alice:p@ss@host/x.git", want: "https://host/x.git"},
		{name: "@ in the path is not user info", in: "https://host/org/@scope/x.git", want: "https://host/org/@scope/x.git"},
		{name: "several URLs", in: "https://a:one@h1/x and HTTPS://b:two@h2/y", want: "https://h1/x and HTTPS://h2/y"},
		{name: "several URLs, no space", in: "'https://a:one@h1/x','https://b:two@h2/y'", want: "'https://h1/x','https://h2/y'"},
		{name: "several URLs, no path", in: "https://a:one@h1,https://b:two@h2", want: "https://h1,https://h2"},
		{name: "on several lines", in: "https://a:one@h1/x\nhttps://b:two@h2/y", want: "https://h1/x\nhttps://h2/y"},
		{name: "other scheme", in: "ftp://a:one@h1/x", want: "ftp://h1/x"},
		{name: "ssh login name kept", in: "ssh://git@host:22/r.git", want: "ssh://git@host:22/r.git"},
		{name: "SSH login name kept", in: "SSH://git@host/r.git", want: "SSH://git@host/r.git"},
		{name: "ssh password dropped", in: "ssh://git:pw@host/r.git", want: "ssh://git@host/r.git"},
		{name: "git+ssh login name kept", in: "git+ssh://deploy@host/r.git", want: "git+ssh://deploy@host/r.git"},
		{name: "scp-like kept", in: "git@github.com:org/r.git", want: "git@github.com:org/r.git"},
		{name: "no user info", in: "https://host/x.git", want: "https://host/x.git"},
		{name: "no URL", in: "ref main not found", want: "ref main not found"},
		{name: "e-mail address", in: "author alice@example.com", want: "author alice@example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Scrub(tt.in); got != tt.want {
				t.Errorf("Scrub(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestScrubErr(t *testing.T) {
	base := errors.New("dial HTTPS://alice:s3cret@host/x.git")
	err := fmt.Errorf("sync: %w", scrubErr(base))
	if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "alice") {
		t.Fatalf("err = %v", err)
	}
	if !errors.Is(err, base) {
		t.Fatal("the scrubbed error no longer wraps the original")
	}
}

func TestScrub(t *testing.T) {
	tests := map[string]string{
		"fetch https://alice:s3cret@git.example.com/x.git: 401": "fetch https://git.example.com/x.git: 401",
		"https://tok3n@host/r.git":                              "https://host/r.git",
		"ssh://git@host:22/r.git":                               "ssh://git@host:22/r.git",
		"no url here":                                           "no url here",
	}
	for in, want := range tests {
		if got := Scrub(in); got != want {
			t.Errorf("Scrub(%q) = %q, want %q", in, got, want)
		}
	}
}
