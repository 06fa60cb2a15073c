package commitstatus

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Credentials go to the configured origin only (docs/security.md,
// "Credentials"): a client follows no redirect, since Go strips
// Authorization on a redirect to another host but not PRIVATE-TOKEN nor
// the webhook's signature, and a same-origin redirect is a misconfigured
// URL worth fixing rather than following. Plain http:// is refused unless
// the host is named in AllowHTTP, so a token never travels in clear by a
// typo.

// errRedirect: the forge answered a redirect, which is never followed.
var errRedirect = errors.New("redirect not followed")

// checkURL parses an API or webhook URL: https, or http for a host that
// allowHTTP names (host, or host:port).
func checkURL(what, raw string, allowHTTP []string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("%s %q: want an https URL", what, scrubURL(raw))
	}
	if u.Scheme == "http" && !httpAllowed(u, allowHTTP) {
		return nil, fmt.Errorf("%s %s: plain http would send the credentials in clear; use https, or name the host in ADDON_OPERATOR_COMMIT_STATUS_ALLOW_HTTP_HOSTS", what, scrubURL(raw))
	}
	return u, nil
}

func httpAllowed(u *url.URL, allow []string) bool {
	return slices.ContainsFunc(allow, func(h string) bool {
		h = strings.TrimSpace(h)
		return h != "" && (strings.EqualFold(h, u.Host) || strings.EqualFold(h, u.Hostname()))
	})
}

// client is c (or a default one) that follows no redirect; c itself is
// left as it was.
func client(c *http.Client) *http.Client {
	out := http.Client{Timeout: defaultTimeout}
	if c != nil {
		out = *c
	}
	out.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &out
}

// redirectError is a 3xx answer as an error naming where it pointed (its
// URL scrubbed); not retried: the setting needs fixing.
func redirectError(resp *http.Response) error {
	loc := resp.Header.Get("Location")
	if loc != "" {
		loc = " to " + scrubURL(loc)
	}
	return fmt.Errorf("%w: %w: HTTP %d%s; set the URL the forge redirects to", errTerminal, errRedirect, resp.StatusCode, loc)
}
