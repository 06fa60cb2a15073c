package commitstatus

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a server on 127.0.0.1 that keeps every request's headers.
type recorder struct {
	*httptest.Server
	mu      sync.Mutex
	headers []http.Header
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.headers = append(r.headers, req.Header.Clone())
		r.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) requests() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.headers
}

// TestRedirectSendsNoCredentials: a forge that answers a redirect to
// another origin (another port of 127.0.0.1) gets the status refused, and
// the other origin receives nothing, neither the token (PRIVATE-TOKEN,
// which Go does not strip across hosts, nor Authorization) nor the
// signature. A redirect to the same origin is not followed either.
func TestRedirectSendsNoCredentials(t *testing.T) {
	other := newRecorder(t)
	var hits sync.Map
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hits.Store(req.URL.Path, true)
		target := other.URL + req.URL.Path
		if strings.HasSuffix(req.URL.Path, "/same") {
			target = "/moved" + req.URL.Path
		}
		http.Redirect(w, req, target, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	token := writeFile(t, "token", "forge-t0ken")
	secret := writeFile(t, "secret", "hmac-key")
	tests := []struct {
		name string
		make func() (Provider, error)
	}{
		{"github", func() (Provider, error) {
			return NewGitHub(GitHubOptions{BaseURL: redirector.URL + "/gh", Repository: "o/r", TokenFile: token, AllowHTTP: local})
		}},
		{"gitlab", func() (Provider, error) {
			return NewGitLab(GitLabOptions{BaseURL: redirector.URL + "/gl", Project: "g/p", TokenFile: token, AllowHTTP: local})
		}},
		{"webhook", func() (Provider, error) {
			return NewWebhook(WebhookOptions{URL: redirector.URL + "/hook", TokenFile: token, SecretFile: secret, AllowHTTP: local})
		}},
		{"same origin", func() (Provider, error) {
			return NewWebhook(WebhookOptions{URL: redirector.URL + "/same", TokenFile: token, AllowHTTP: local})
		}},
		{"caller's client", func() (Provider, error) {
			return NewGitLab(GitLabOptions{BaseURL: redirector.URL + "/own", Project: "g/p", TokenFile: token, AllowHTTP: local,
				Client: &http.Client{Timeout: 5 * time.Second}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.make()
			if err != nil {
				t.Fatal(err)
			}
			err = p.Post(t.Context(), Status{Commit: sha, Context: "addon-operator", State: Applied})
			if !errors.Is(err, errRedirect) || retryable(err) {
				t.Fatalf("err = %v, want a terminal refused redirect", err)
			}
			if strings.Contains(err.Error(), "forge-t0ken") {
				t.Fatalf("the token in the error: %v", err)
			}
		})
	}
	if got := other.requests(); len(got) != 0 {
		t.Fatalf("the other origin received %d requests, first with headers %v", len(got), got[0])
	}
	n := 0
	hits.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), "/moved") {
			t.Errorf("same-origin redirect followed to %s", k)
		}
		n++
		return true
	})
	if n != len(tests) {
		t.Fatalf("the forge saw %d paths, want %d", n, len(tests))
	}
}

// TestPlainHTTPRefused: an http:// API or webhook URL is refused unless
// its host is allowed; then only that host (or host:port) is.
func TestPlainHTTPRefused(t *testing.T) {
	token := writeFile(t, "token", "t")
	tests := []struct {
		name  string
		url   string
		allow []string
		ok    bool
	}{
		{"https", "https://git.example.com/api/v1", nil, true},
		{"http", "http://git.example.com/api/v1", nil, false},
		{"http other host allowed", "http://git.example.com/api/v1", []string{"127.0.0.1"}, false},
		{"http host allowed", "http://git.example.com/api/v1", []string{"git.example.com"}, true},
		{"http host:port allowed", "http://git.example.com:8080/api/v1", []string{"git.example.com:8080"}, true},
		{"http other port allowed", "http://git.example.com:8080/api/v1", []string{"git.example.com:9090"}, false},
		{"http case", "http://Git.Example.com/api/v1", []string{"git.example.com"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errGH := NewGitHub(GitHubOptions{BaseURL: tt.url, Repository: "o/r", TokenFile: token, AllowHTTP: tt.allow})
			_, errGL := NewGitLab(GitLabOptions{BaseURL: tt.url, Project: "g/p", TokenFile: token, AllowHTTP: tt.allow})
			_, errWH := NewWebhook(WebhookOptions{URL: tt.url, AllowHTTP: tt.allow})
			for _, err := range []error{errGH, errGL, errWH} {
				if tt.ok != (err == nil) {
					t.Fatalf("err = %v, want ok %v", err, tt.ok)
				}
				if err != nil && !strings.Contains(err.Error(), "ADDON_OPERATOR_COMMIT_STATUS_ALLOW_HTTP_HOSTS") {
					t.Fatalf("err = %v, want it to name the setting", err)
				}
			}
		})
	}
}
