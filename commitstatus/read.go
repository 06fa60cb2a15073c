package commitstatus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Reading a commit's statuses back from the forge, for the ring gate
// (docs/architecture.md, "Fleets (groundwork)"): the GitHub-compatible
// combined status (GitHub, Gitea, Forgejo) and GitLab's statuses list,
// through the same providers, token file and URL rules as posting.

// Posted is one commit status as the forge holds it: the newest of its
// context.
type Posted struct {
	Context     string
	Description string
	// Outcome is pending, success or failure (GitLab's and Gitea's
	// words mapped onto these; error is failure).
	Outcome string
	// Time is when the forge last changed it.
	Time time.Time
}

// Lister reads a commit's statuses from a forge.
type Lister interface {
	Statuses(ctx context.Context, commit string) ([]Posted, error)
}

var (
	_ Lister = (*GitHub)(nil)
	_ Lister = (*GitLab)(nil)
	_ Lister = (*ReadCache)(nil)
)

// Bounds of a read: a commit with more statuses than MaxStatuses, or
// an answer larger than MaxReadBytes, is an error (the rollout holds),
// never a partial answer a gate could count wrong.
const (
	MaxReadBytes = 2 << 20
	MaxStatuses  = 2000
	// readPageSize is what a page asks for (GitHub's and GitLab's most;
	// Gitea may answer fewer).
	readPageSize = 100
	// maxReadPages bounds the requests of one read whatever a forge
	// says of its pages.
	maxReadPages = MaxStatuses/readPageSize + 5
)

// errTooMany: the commit has more statuses than a read takes.
var errTooMany = errors.New("more statuses than a read takes")

// getJSON GETs u, decodes a 2xx answer of at most MaxReadBytes into v
// and returns its headers; another answer is an *HTTPError (a 403 that
// says the rate limit is spent counts as a 429, with its reset as
// Retry-After).
func getJSON(ctx context.Context, client *http.Client, u string, headers map[string]string, v any) (http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errTerminal, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "addon-operator")
	for k, val := range headers {
		req.Header.Set(k, val)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 3 {
		return nil, redirectError(resp)
	}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		he := &HTTPError{Code: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After"), Body: strings.Join(strings.Fields(string(b)), " ")}
		if resp.StatusCode == http.StatusForbidden && resp.Header.Get("X-RateLimit-Remaining") == "0" {
			he.Code = http.StatusTooManyRequests
			if reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil && he.RetryAfter == "" {
				he.RetryAfter = time.Unix(reset, 0).UTC().Format(http.TimeFormat)
			}
		}
		return nil, he
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxReadBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxReadBytes {
		return nil, fmt.Errorf("%w: an answer larger than %d bytes", errTooMany, MaxReadBytes)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("%w: the forge's answer is not the statuses JSON: %w", errTerminal, err)
	}
	return resp.Header, nil
}

// latest keeps the newest status of each context, in the order first
// seen.
func latest(in []Posted) []Posted {
	at := map[string]int{}
	var out []Posted
	for _, p := range in {
		if i, ok := at[p.Context]; ok {
			if p.Time.After(out[i].Time) {
				out[i] = p
			}
			continue
		}
		at[p.Context] = len(out)
		out = append(out, p)
	}
	return out
}

// newest is the latest of the times that are set.
func newest(ts ...*time.Time) time.Time {
	var t time.Time
	for _, x := range ts {
		if x != nil && x.After(t) {
			t = *x
		}
	}
	return t
}

// Statuses reads the commit's combined status: GET
// /repos/{owner}/{repo}/commits/{sha}/status, page by page (GitHub's
// per_page, Gitea's limit; the count in total_count, or Gitea's
// X-Total-Count), the newest status of each context.
func (g *GitHub) Statuses(ctx context.Context, commit string) ([]Posted, error) {
	token, err := g.token.read()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errTerminal, err)
	}
	headers := map[string]string{"Authorization": "Bearer " + token, "X-GitHub-Api-Version": "2022-11-28"}
	var out []Posted
	for page := 1; page <= maxReadPages; page++ {
		var body struct {
			TotalCount int `json:"total_count"`
			Statuses   []struct {
				State, Status, Context, Description string
				Created                             *time.Time `json:"created_at"`
				Updated                             *time.Time `json:"updated_at"`
			}
		}
		u := fmt.Sprintf("%scommits/%s/status?per_page=%d&limit=%d&page=%d", g.repo, url.PathEscape(commit), readPageSize, readPageSize, page)
		h, err := getJSON(ctx, g.client, u, headers, &body)
		if err != nil {
			return nil, redacted(err, token)
		}
		for _, s := range body.Statuses {
			state := s.State
			if state == "" {
				state = s.Status // Gitea, Forgejo
			}
			out = append(out, Posted{Context: s.Context, Description: s.Description, Outcome: githubOutcome(state), Time: newest(s.Created, s.Updated)})
		}
		total := body.TotalCount
		if n, err := strconv.Atoi(h.Get("X-Total-Count")); err == nil && n > total {
			total = n
		}
		if total > MaxStatuses || len(out) > MaxStatuses {
			return nil, fmt.Errorf("%w: commit %s has %d statuses, at most %d are read", errTooMany, commit, max(total, len(out)), MaxStatuses)
		}
		if len(body.Statuses) == 0 || len(out) >= total {
			return latest(out), nil
		}
	}
	return nil, fmt.Errorf("%w: commit %s: still more statuses after %d pages", errTooMany, commit, maxReadPages)
}

func githubOutcome(state string) string {
	switch state {
	case "success":
		return "success"
	case "failure", "error":
		return "failure"
	}
	return "pending"
}

// Statuses reads the commit's statuses: GET
// /projects/{id}/repository/commits/{sha}/statuses (the newest of each
// name), page by page as X-Next-Page says.
func (g *GitLab) Statuses(ctx context.Context, commit string) ([]Posted, error) {
	token, err := g.token.read()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errTerminal, err)
	}
	var out []Posted
	for page := 1; page <= maxReadPages; page++ {
		var body []struct {
			Status, Name, Description string
			Created                   *time.Time `json:"created_at"`
			Started                   *time.Time `json:"started_at"`
			Finished                  *time.Time `json:"finished_at"`
		}
		u := fmt.Sprintf("%srepository/commits/%s/statuses?per_page=%d&page=%d", g.project, url.PathEscape(commit), readPageSize, page)
		h, err := getJSON(ctx, g.client, u, map[string]string{"PRIVATE-TOKEN": token}, &body)
		if err != nil {
			return nil, redacted(err, token)
		}
		for _, s := range body {
			out = append(out, Posted{Context: s.Name, Description: s.Description, Outcome: gitlabOutcome(s.Status),
				Time: newest(s.Created, s.Started, s.Finished)})
		}
		if len(out) > MaxStatuses {
			return nil, fmt.Errorf("%w: commit %s has more than %d statuses", errTooMany, commit, MaxStatuses)
		}
		next := h.Get("X-Next-Page")
		if len(body) == 0 || next == "" && len(body) < readPageSize {
			return latest(out), nil
		}
	}
	return nil, fmt.Errorf("%w: commit %s: still more statuses after %d pages", errTooMany, commit, maxReadPages)
}

func gitlabOutcome(status string) string {
	switch status {
	case "success":
		return "success"
	case "failed", "canceled":
		return "failure"
	}
	return "pending"
}
