package commitstatus

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// DefaultGitLabURL is gitlab.com's API.
const DefaultGitLabURL = "https://gitlab.com/api/v4"

// GitLabOptions configure NewGitLab.
type GitLabOptions struct {
	// BaseURL is the API's root, ending in /api/v4 (default DefaultGitLabURL).
	BaseURL string
	// Project is the project's numeric id or its path (group/sub/name).
	Project   string
	TokenFile string
	// AllowHTTP: as GitHubOptions.AllowHTTP
	AllowHTTP []string
	Client    *http.Client
}

// GitLab posts to GitLab's commit status API: POST
// /projects/{id}/statuses/{sha} with state running, success or failed and
// the context as the status's name.
type GitLab struct {
	endpoint string
	project  string // up to and including /projects/{id}/
	token    secretFile
	client   *http.Client
}

// NewGitLab checks the options and reads the token once.
func NewGitLab(o GitLabOptions) (*GitLab, error) {
	project := strings.Trim(o.Project, "/")
	if project == "" {
		return nil, fmt.Errorf("project: want a numeric id or a path such as group/name")
	}
	base, err := baseURL(o.BaseURL, DefaultGitLabURL, o.AllowHTTP)
	if err != nil {
		return nil, err
	}
	if o.TokenFile == "" {
		return nil, fmt.Errorf("a token file is required")
	}
	if _, err := secretFile(o.TokenFile).read(); err != nil {
		return nil, err
	}
	// a path is one URL-encoded segment: group%2Fname
	p := base + "/projects/" + url.PathEscape(project) + "/"
	return &GitLab{endpoint: p + "statuses/", project: p,
		token: secretFile(o.TokenFile), client: client(o.Client)}, nil
}

// gitlabState: GitLab says running and failed where GitHub says pending
// and failure; a held commit is not running: GitLab's pending.
func gitlabState(s State) string {
	if s == Held {
		return "pending"
	}
	switch s.outcome() {
	case "success":
		return "success"
	case "failure":
		return "failed"
	}
	return "running"
}

// Post sends s; the token goes in the PRIVATE-TOKEN header only.
func (g *GitLab) Post(ctx context.Context, s Status) error {
	token, err := g.token.read()
	if err != nil {
		return fmt.Errorf("%w: %w", errTerminal, err)
	}
	fields := map[string]string{"state": gitlabState(s.State), "name": s.Context, "description": s.Description}
	if s.TargetURL != "" {
		fields["target_url"] = s.TargetURL
	}
	err = postJSON(ctx, g.client, g.endpoint+url.PathEscape(s.Commit), map[string]string{"PRIVATE-TOKEN": token}, marshal(fields))
	var he *HTTPError
	if errors.As(err, &he) && he.Code == http.StatusBadRequest && strings.Contains(he.Body, "Cannot transition status") {
		// GitLab refuses a state the status already has (applying and
		// progressing are both running): it is what we meant to post
		return nil
	}
	return redacted(err, token)
}
