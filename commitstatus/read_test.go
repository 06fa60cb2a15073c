package commitstatus

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/addonops/addon-operator/internal/forgetest"
)

var readAt = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// reader is a provider of each API over the same forge, posting and
// reading.
type reader interface {
	Provider
	Lister
}

func readers(t *testing.T, forge *forgetest.Server, token string) map[string]reader {
	t.Helper()
	tf := writeFile(t, "token", token)
	gh, err := NewGitHub(GitHubOptions{BaseURL: forge.GitHubURL(), Repository: "fleet/addons", TokenFile: tf, AllowHTTP: local})
	if err != nil {
		t.Fatal(err)
	}
	gitea, err := NewGitHub(GitHubOptions{BaseURL: forge.GiteaURL(), Repository: "fleet/addons", TokenFile: tf, AllowHTTP: local})
	if err != nil {
		t.Fatal(err)
	}
	gl, err := NewGitLab(GitLabOptions{BaseURL: forge.GitLabURL(), Project: "fleet/addons", TokenFile: tf, AllowHTTP: local})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]reader{"github": gh, "gitea": gitea, "gitlab": gl}
}

// Each API's statuses read back: the newest of each context, every page,
// the report's own state and ring through ParseOwn.
func TestReadStatuses(t *testing.T) {
	for _, tt := range []struct {
		api   string
		extra int // injected contexts, for pages
		reads int // requests the read takes
	}{
		{"github", 0, 1}, {"github", 250, 3},
		{"gitea", 0, 1}, {"gitea", 250, 6}, // pages of 50 whatever is asked
		{"gitlab", 0, 1}, {"gitlab", 250, 3},
	} {
		t.Run(fmt.Sprintf("%s+%d", tt.api, tt.extra), func(t *testing.T) {
			forge := forgetest.New("tok")
			defer forge.Close()
			clock := readAt
			forge.Now = func() time.Time { return clock }
			p := readers(t, forge, "tok")[tt.api]
			post := func(cluster string, ring int, st State) {
				t.Helper()
				r := Report{State: st}
				if err := p.Post(context.Background(), Status{Commit: sha, Context: statusContext(cluster, ""), State: st,
					Description: withRing(describe(r, cluster), &ring)}); err != nil {
					t.Fatal(err)
				}
				clock = clock.Add(time.Minute)
			}
			post("canary", 0, Applying)
			post("canary", 0, Applied)
			post("canary", 0, Healthy)
			post("eu-1", 1, Applying)
			post("eu-2", 1, Degraded)
			api := map[string]string{"github": "github", "gitea": "github", "gitlab": "gitlab"}[tt.api]
			for i := range tt.extra {
				forge.Inject(forgetest.Status{API: api, Repo: "fleet/addons", Commit: sha, State: "success", Context: fmt.Sprintf("ci/check-%03d", i), Time: readAt})
			}
			forge.Inject(forgetest.Status{API: api, Repo: "fleet/addons", Commit: commit(2), State: "failure", Context: "addon-operator/canary", Description: "[ring 0] failed on canary"})
			before := forge.Reads()
			got, err := p.Statuses(context.Background(), sha)
			if err != nil {
				t.Fatal(err)
			}
			if n := forge.Reads() - before; n != tt.reads {
				t.Errorf("the read took %d requests, want %d", n, tt.reads)
			}
			if len(got) != 3+tt.extra {
				t.Fatalf("read %d statuses, want %d: %+v", len(got), 3+tt.extra, got)
			}
			own := map[string]string{}
			for _, s := range got {
				if o, ok := ParseOwn(s.Context, s.Description); ok {
					own[o.Cluster] = fmt.Sprintf("ring %d %s %s %s", o.Ring, o.State, s.Outcome, s.Time.Format("15:04"))
				}
			}
			want := map[string]string{
				"canary": "ring 0 healthy success 12:02",
				"eu-1":   "ring 1 applying pending 12:03",
				"eu-2":   "ring 1 degraded failure 12:04",
			}
			if fmt.Sprint(own) != fmt.Sprint(want) {
				t.Fatalf("read %v, want %v", own, want)
			}
		})
	}
}

// A read that is too large is an error, never part of the answer.
func TestReadBounds(t *testing.T) {
	for _, api := range []string{"github", "gitea", "gitlab"} {
		t.Run(api, func(t *testing.T) {
			forge := forgetest.New("tok")
			defer forge.Close()
			p := readers(t, forge, "tok")[api]
			kind := map[string]string{"github": "github", "gitea": "github", "gitlab": "gitlab"}[api]
			var many []forgetest.Status
			for i := range MaxStatuses + 1 {
				many = append(many, forgetest.Status{API: kind, Repo: "fleet/addons", Commit: sha, State: "success", Context: fmt.Sprintf("c-%04d", i)})
			}
			forge.Inject(many...)
			if _, err := p.Statuses(context.Background(), sha); !errors.Is(err, errTooMany) {
				t.Fatalf("%d statuses: err = %v, want too many", len(many), err)
			}
			if n := forge.Reads(); n > maxReadPages {
				t.Fatalf("%d requests", n)
			}
			forge.Inject(forgetest.Status{API: kind, Repo: "fleet/addons", Commit: commit(3), State: "success", Context: "big", Description: strings.Repeat("x", MaxReadBytes)})
			if _, err := p.Statuses(context.Background(), commit(3)); !errors.Is(err, errTooMany) || !strings.Contains(err.Error(), "larger than") {
				t.Fatalf("a large answer: err = %v", err)
			}
		})
	}
}

// The forge's refusals: a wrong token (never in the error), a rate
// limit (429, or GitHub's 403 with the limit spent), a 5xx.
func TestReadErrors(t *testing.T) {
	reset := readAt.Add(10 * time.Minute)
	tests := []struct {
		name    string
		fail    forgetest.Failure
		token   string
		code    int
		retryIn time.Duration
	}{
		{"wrong token", forgetest.Failure{}, "wrong-token", http.StatusUnauthorized, 0},
		{"429", forgetest.Failure{Code: 429, RetryAfter: "120", Body: "slow down"}, "tok", http.StatusTooManyRequests, 2 * time.Minute},
		{"403 limit spent", forgetest.Failure{Code: 403, Body: "API rate limit exceeded", Header: map[string]string{
			"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": fmt.Sprint(reset.Unix())}}, "tok", http.StatusTooManyRequests, 10 * time.Minute},
		{"403 otherwise", forgetest.Failure{Code: 403, Body: "forbidden"}, "tok", http.StatusForbidden, 0},
		{"503", forgetest.Failure{Code: 503, Body: "upstream down"}, "tok", http.StatusServiceUnavailable, 0},
	}
	for _, tt := range tests {
		for _, api := range []string{"github", "gitea", "gitlab"} {
			t.Run(tt.name+" "+api, func(t *testing.T) {
				forge := forgetest.New("tok")
				defer forge.Close()
				if tt.fail.Code != 0 {
					forge.Fail(tt.fail)
				}
				_, err := readers(t, forge, tt.token)[api].Statuses(context.Background(), sha)
				var he *HTTPError
				if !errors.As(err, &he) || he.Code != tt.code {
					t.Fatalf("err = %v, want HTTP %d", err, tt.code)
				}
				if got := retryAfter(he.RetryAfter, readAt); got != tt.retryIn {
					t.Fatalf("retry in %s, want %s", got, tt.retryIn)
				}
				if strings.Contains(err.Error(), "wrong-token") {
					t.Fatalf("the token leaked: %v", err)
				}
			})
		}
	}
}
