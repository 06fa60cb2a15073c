package commitstatus

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Provider posts one commit status to a forge.
type Provider interface {
	Post(ctx context.Context, s Status) error
}

var (
	_ Provider = (*GitHub)(nil)
	_ Provider = (*GitLab)(nil)
	_ Provider = (*Webhook)(nil)
)

// DefaultGitHubURL is GitHub's API; Gitea and Forgejo serve the same
// statuses API under https://<host>/api/v1.
const DefaultGitHubURL = "https://api.github.com"

// GitHubOptions configure NewGitHub.
type GitHubOptions struct {
	// BaseURL is the API's root (default DefaultGitHubURL).
	BaseURL string
	// Repository is owner/name.
	Repository string
	// TokenFile holds the token (a file only: docs/security.md).
	TokenFile string
	// AllowHTTP names the hosts (host or host:port) BaseURL may reach
	// over plain http; https otherwise.
	AllowHTTP []string
	Client    *http.Client
}

// GitHub posts to the GitHub-compatible statuses API: POST
// /repos/{owner}/{repo}/statuses/{sha} with state pending, success or
// failure. GitHub, Gitea and Forgejo share it.
type GitHub struct {
	endpoint string // up to and including /statuses/
	repo     string // up to and including /repos/{owner}/{repo}/
	token    secretFile
	client   *http.Client
}

// NewGitHub checks the options and reads the token once, so a bad setting
// fails at start-up rather than at the first post.
func NewGitHub(o GitHubOptions) (*GitHub, error) {
	owner, name, ok := strings.Cut(o.Repository, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("repository %q: want owner/name", o.Repository)
	}
	base, err := baseURL(o.BaseURL, DefaultGitHubURL, o.AllowHTTP)
	if err != nil {
		return nil, err
	}
	if o.TokenFile == "" {
		return nil, fmt.Errorf("a token file is required")
	}
	if _, err := secretFile(o.TokenFile).read(); err != nil {
		return nil, err
	}
	repo := base + "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(name) + "/"
	return &GitHub{
		endpoint: repo + "statuses/", repo: repo,
		token: secretFile(o.TokenFile), client: client(o.Client),
	}, nil
}

// Post sends s; the token goes in the Authorization header only.
func (g *GitHub) Post(ctx context.Context, s Status) error {
	token, err := g.token.read()
	if err != nil {
		return fmt.Errorf("%w: %w", errTerminal, err)
	}
	body := marshal(map[string]string{
		"state": s.State.outcome(), "context": s.Context,
		"description": s.Description, "target_url": s.TargetURL,
	})
	err = postJSON(ctx, g.client, g.endpoint+url.PathEscape(s.Commit),
		map[string]string{"Authorization": "Bearer " + token, "X-GitHub-Api-Version": "2022-11-28"}, body)
	return redacted(err, token)
}

// baseURL checks an API root (def when empty) and drops a trailing slash.
func baseURL(raw, def string, allowHTTP []string) (string, error) {
	if raw == "" {
		raw = def
	}
	u, err := checkURL("API URL", raw, allowHTTP)
	if err != nil {
		return "", err
	}
	if u.User != nil {
		return "", fmt.Errorf("API URL %s: credentials in the URL; use the token file", scrubURL(raw))
	}
	return strings.TrimSuffix(raw, "/"), nil
}
