package commitstatus

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// secretFile is a credential kept in a file (a Secret volume). It is read
// at each post, so a rotated token takes effect without a restart; posts
// are rare and rate-limited, so reading a small file costs nothing that
// matters (docs/security.md, "Credentials").
type secretFile string

// read returns the file's content with surrounding white space trimmed;
// an empty file is an error, never an empty credential.
func (f secretFile) read() (string, error) {
	if f == "" {
		return "", nil
	}
	b, err := os.ReadFile(string(f))
	if err != nil {
		return "", fmt.Errorf("credential file: %w", err)
	}
	v := string(bytes.TrimSpace(b))
	if v == "" {
		return "", fmt.Errorf("credential file %s: empty", string(f))
	}
	return v, nil
}

// redacted is err with every secret replaced and a URL's user info and
// query dropped: errors are logged, and a webhook URL may carry a token.
func redacted(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		msg = strings.ReplaceAll(msg, ue.URL, scrubURL(ue.URL))
	}
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "[redacted]")
		}
	}
	return &redactedError{msg: msg, err: err}
}

// redactedError keeps the cause for errors.As (an *HTTPError's code) while
// its message is the redacted one.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// scrubURL drops user info, query and fragment: what is left names the
// endpoint and nothing secret.
func scrubURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
