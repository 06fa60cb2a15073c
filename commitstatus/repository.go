package commitstatus

import (
	"fmt"
	"net/url"
	"strings"
)

// RepositoryFromURL is the repository path a git URL names, without a
// leading slash or a .git suffix: owner/name on GitHub, Gitea and Forgejo,
// group/sub/name on GitLab. It reads https and ssh URLs and scp-like
// addresses (git@host:owner/name.git).
func RepositoryFromURL(raw string) (string, error) {
	var path string
	switch {
	case strings.Contains(raw, "://"):
		u, err := url.Parse(raw)
		if err != nil {
			return "", fmt.Errorf("git URL %s: %w", scrubURL(raw), err)
		}
		path = u.Path
	case strings.Contains(raw, ":") && !strings.HasPrefix(raw, "/"):
		// scp-like: [user@]host:path
		_, path, _ = strings.Cut(raw, ":")
	default:
		return "", fmt.Errorf("git URL %q names no forge repository", scrubURL(raw))
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	path = strings.TrimSuffix(path, "/")
	if path == "" || !strings.Contains(path, "/") {
		return "", fmt.Errorf("git URL %s: no owner/name in its path", scrubURL(raw))
	}
	return path, nil
}
