package commitstatus

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/addonops/addon-operator/internal/forgetest"
)

const sha = "0123456789abcdef0123456789abcdef01234567"

// writeFile writes content to a new file in the test's temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProviders posts one status through each provider to a forge that
// checks paths, credentials and bodies as the real APIs do.
func TestProviders(t *testing.T) {
	forge := forgetest.New("s3cret-token")
	defer forge.Close()
	forge.Secret = "hmac-key"
	token := writeFile(t, "token", "s3cret-token\n")
	secret := writeFile(t, "secret", "hmac-key")
	now := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

	tests := []struct {
		name      string
		provider  func() (Provider, error)
		state     State
		wantAPI   string
		wantRepo  string
		wantState string
	}{
		{"github success", func() (Provider, error) {
			return NewGitHub(GitHubOptions{BaseURL: forge.GitHubURL() + "/", Repository: "platform/addons", TokenFile: token, AllowHTTP: local})
		}, Applied, "github", "platform/addons", "success"},
		{"github pending", func() (Provider, error) {
			return NewGitHub(GitHubOptions{BaseURL: forge.GitHubURL(), Repository: "platform/addons", TokenFile: token, AllowHTTP: local})
		}, Applying, "github", "platform/addons", "pending"},
		{"github failure", func() (Provider, error) {
			return NewGitHub(GitHubOptions{BaseURL: forge.GitHubURL(), Repository: "platform/addons", TokenFile: token, AllowHTTP: local})
		}, Degraded, "github", "platform/addons", "failure"},
		{"gitlab path project", func() (Provider, error) {
			return NewGitLab(GitLabOptions{BaseURL: forge.GitLabURL(), Project: "group/sub/addons", TokenFile: token, AllowHTTP: local})
		}, Applying, "gitlab", "group/sub/addons", "running"},
		{"gitlab held", func() (Provider, error) {
			return NewGitLab(GitLabOptions{BaseURL: forge.GitLabURL(), Project: "group/sub/addons", TokenFile: token, AllowHTTP: local})
		}, Held, "gitlab", "group/sub/addons", "pending"},
		{"github held", func() (Provider, error) {
			return NewGitHub(GitHubOptions{BaseURL: forge.GitHubURL(), Repository: "platform/addons", TokenFile: token, AllowHTTP: local})
		}, Held, "github", "platform/addons", "pending"},
		{"gitlab numeric project", func() (Provider, error) {
			return NewGitLab(GitLabOptions{BaseURL: forge.GitLabURL(), Project: "42", TokenFile: token, AllowHTTP: local})
		}, Failed, "gitlab", "42", "failed"},
		{"webhook signed", func() (Provider, error) {
			return NewWebhook(WebhookOptions{URL: forge.WebhookURL(), Repository: "platform/addons", TokenFile: token, SecretFile: secret, Now: now, AllowHTTP: local})
		}, Applied, "webhook", "", "applied"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.provider()
			if err != nil {
				t.Fatal(err)
			}
			st := Status{Commit: sha, Context: "addon-operator/prod", Cluster: "prod", State: tt.state,
				Description: "applied on prod", TargetURL: "https://ops.example.com/status"}
			if err := p.Post(context.Background(), st); err != nil {
				t.Fatal(err)
			}
			got := forge.Statuses()
			if len(got) != i+1 {
				t.Fatalf("forge holds %d statuses, want %d", len(got), i+1)
			}
			last := got[i]
			if last.API != tt.wantAPI || last.Repo != tt.wantRepo || last.Commit != sha || last.State != tt.wantState ||
				last.Context != "addon-operator/prod" || last.Description != "applied on prod" {
				t.Fatalf("forge got %+v", last)
			}
			if tt.wantAPI == "webhook" {
				var body WebhookBody
				if err := json.Unmarshal(last.Body, &body); err != nil {
					t.Fatal(err)
				}
				want := WebhookBody{Commit: sha, Repository: "platform/addons", Context: "addon-operator/prod", Cluster: "prod",
					State: "applied", Outcome: "success", Description: "applied on prod", TargetURL: "https://ops.example.com/status", Time: now()}
				if body != want {
					t.Fatalf("webhook body = %+v, want %+v", body, want)
				}
			}
		})
	}
}

// TestProviderErrors: a refused token, a rotated one picked up from its
// file, a wrong signature; the token never shows in an error.
func TestProviderErrors(t *testing.T) {
	forge := forgetest.New("good-token")
	defer forge.Close()
	tokenFile := writeFile(t, "token", "wrong-token")
	gh, err := NewGitHub(GitHubOptions{BaseURL: forge.GitHubURL(), Repository: "o/r", TokenFile: tokenFile, AllowHTTP: local})
	if err != nil {
		t.Fatal(err)
	}
	st := Status{Commit: sha, Context: "addon-operator", State: Applied}
	err = gh.Post(context.Background(), st)
	var he *HTTPError
	if !errors.As(err, &he) || he.Code != 401 || retryable(err) {
		t.Fatalf("wrong token: err = %v, want a terminal 401", err)
	}
	if strings.Contains(err.Error(), "wrong-token") {
		t.Fatalf("the token leaked into the error: %v", err)
	}
	// rotated in place: the next post reads it
	if err := os.WriteFile(tokenFile, []byte("good-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := gh.Post(context.Background(), st); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	// emptied: not retried, no empty credential sent
	if err := os.WriteFile(tokenFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	before := forge.Requests()
	if err := gh.Post(context.Background(), st); err == nil || retryable(err) || forge.Requests() != before {
		t.Fatalf("empty token file: err = %v, requests %d → %d", err, before, forge.Requests())
	}

	forge.Secret = "right"
	wh, err := NewWebhook(WebhookOptions{URL: forge.WebhookURL(), SecretFile: writeFile(t, "secret", "wrong"), TokenFile: writeFile(t, "t", "good-token"), AllowHTTP: local})
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Post(context.Background(), st); !errors.As(err, &he) || he.Code != 401 {
		t.Fatalf("bad signature: err = %v", err)
	}
	// a URL with a token in its query: errors leave the query out
	wq, err := NewWebhook(WebhookOptions{URL: "http://127.0.0.1:1/hook?key=url-secret", AllowHTTP: local})
	if err != nil {
		t.Fatal(err)
	}
	if err := wq.Post(context.Background(), st); err == nil || strings.Contains(err.Error(), "url-secret") {
		t.Fatalf("unreachable webhook: err = %v, want one without the URL's query", err)
	}
}

func TestNewProviderRefusesBadSettings(t *testing.T) {
	token := writeFile(t, "token", "t")
	empty := writeFile(t, "empty", " \n")
	tests := []struct {
		name string
		make func() error
		want string
	}{
		{"github no owner", func() error { _, err := NewGitHub(GitHubOptions{Repository: "addons", TokenFile: token}); return err }, "owner/name"},
		{"github three parts", func() error { _, err := NewGitHub(GitHubOptions{Repository: "a/b/c", TokenFile: token}); return err }, "owner/name"},
		{"github no token", func() error { _, err := NewGitHub(GitHubOptions{Repository: "a/b"}); return err }, "token file"},
		{"github empty token", func() error { _, err := NewGitHub(GitHubOptions{Repository: "a/b", TokenFile: empty}); return err }, "empty"},
		{"github missing token", func() error {
			_, err := NewGitHub(GitHubOptions{Repository: "a/b", TokenFile: "/nonexistent/token"})
			return err
		}, "no such file"},
		{"github credentials in URL", func() error {
			_, err := NewGitHub(GitHubOptions{BaseURL: "https://u:p@git.example.com/api/v1", Repository: "a/b", TokenFile: token})
			return err
		}, "credentials in the URL"},
		{"gitlab no project", func() error { _, err := NewGitLab(GitLabOptions{TokenFile: token}); return err }, "project"},
		{"webhook no URL", func() error { _, err := NewWebhook(WebhookOptions{}); return err }, "webhook URL"},
		{"webhook empty secret", func() error {
			_, err := NewWebhook(WebhookOptions{URL: "https://x.example.com/", SecretFile: empty})
			return err
		}, "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.make()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestRepositoryFromURL(t *testing.T) {
	tests := []struct{ url, want, err string }{
		{"https://github.com/platform/addons.git", "platform/addons", ""},
		{"https://user:tok@github.com/platform/addons/", "platform/addons", ""},
		{"https://gitlab.example.com/group/sub/addons.git", "group/sub/addons", ""},
		{"ssh://git@github.com:22/platform/addons.git", "platform/addons", ""},
		{"git@github.com:platform/addons.git", "platform/addons", ""},
		{"gitea.example.com:platform/addons", "platform/addons", ""},
		{"https://github.com/addons", "", "no owner/name"},
		{"/srv/git/addons", "", "names no forge repository"},
		{"file:///srv/git/addons", "srv/git/addons", ""},
	}
	for _, tt := range tests {
		got, err := RepositoryFromURL(tt.url)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err = %v, want %q", tt.url, err, tt.err)
			}
			if err != nil && strings.Contains(err.Error(), "tok") {
				t.Errorf("%s: credentials in the error: %v", tt.url, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s = %q, %v; want %q", tt.url, got, err, tt.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		r       Report
		cluster string
		want    string
	}{
		{Report{State: Applied}, "prod", "applied on prod"},
		{Report{State: Applying}, "", "applying"},
		{Report{Module: "alpha", State: Failed, Reason: "hook a.sh exited 1\nsecret output"}, "prod", "module alpha failed on prod: hook a.sh exited 1"},
		{Report{State: Failed, Reason: long}, "prod", "failed on prod: " + strings.Repeat("x", 140-len("failed on prod: ")-1) + "…"},
	}
	for _, tt := range tests {
		if got := describe(tt.r, tt.cluster); got != tt.want {
			t.Errorf("describe(%+v) = %q, want %q", tt.r, got, tt.want)
		}
	}
	if c := statusContext("prod", "alpha"); c != "addon-operator/prod/alpha" {
		t.Errorf("context = %q", c)
	}
}

// local lets the tests' forge on 127.0.0.1 be reached over plain http.
var local = []string{"127.0.0.1"}
