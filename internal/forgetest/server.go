package forgetest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Status is one accepted post.
type Status struct {
	API string // github, gitlab or webhook
	// Repo is owner/name (github) or the project, decoded (gitlab).
	Repo        string
	Commit      string
	State       string
	Context     string // GitHub's context, GitLab's name
	Description string
	TargetURL   string
	// Body is the request body as sent (the webhook's JSON).
	Body []byte
	// Time is when the forge accepted it (Server.Now), or what a test
	// injected.
	Time time.Time
}

// Failure is an answer the server gives instead of accepting a post.
type Failure struct {
	Code       int
	RetryAfter string
	Body       string
	// Header is set on the answer too (X-RateLimit-Remaining...).
	Header map[string]string
}

// Server is the forge. Token is the credential every API checks
// (Authorization: Bearer for github and webhook, PRIVATE-TOKEN for
// gitlab); Secret, if set, is the webhook's HMAC key.
type Server struct {
	*httptest.Server
	Token  string
	Secret string
	// Now dates accepted posts (default time.Now); set it before the
	// first request.
	Now func() time.Time

	mu       sync.Mutex
	statuses []Status
	failures []Failure
	requests int
	reads    int
}

// New starts a forge on 127.0.0.1; Close stops it.
func New(token string) *Server {
	s := &Server{Token: token}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /github/repos/{owner}/{repo}/statuses/{sha}", s.github)
	mux.HandleFunc("POST /gitlab/projects/{id}/statuses/{sha}", s.gitlab)
	mux.HandleFunc("POST /webhook", s.webhook)
	rd := reads{s}
	mux.HandleFunc("GET /github/repos/{owner}/{repo}/commits/{sha}/status", rd.githubRead(false))
	mux.HandleFunc("POST /gitea/repos/{owner}/{repo}/statuses/{sha}", s.github)
	mux.HandleFunc("GET /gitea/repos/{owner}/{repo}/commits/{sha}/status", rd.githubRead(true))
	mux.HandleFunc("GET /gitlab/projects/{id}/repository/commits/{sha}/statuses", rd.gitlabRead)
	s.Server = httptest.NewServer(mux)
	return s
}

// GitHubURL, GiteaURL, GitLabURL and WebhookURL are the APIs' roots.
// Gitea's is GitHub's statuses API answered as Gitea does (its state
// field named status, pages of at most 50, the count in X-Total-Count);
// both keep their statuses as API github.
func (s *Server) GitHubURL() string  { return s.URL + "/github" }
func (s *Server) GiteaURL() string   { return s.URL + "/gitea" }
func (s *Server) GitLabURL() string  { return s.URL + "/gitlab" }
func (s *Server) WebhookURL() string { return s.URL + "/webhook" }

// Fail makes the next requests (posts and reads) get these answers, one each, in order.
func (s *Server) Fail(f ...Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, f...)
}

// Statuses are the accepted posts, oldest first.
func (s *Server) Statuses() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.statuses)
}

// Requests counts every request, accepted or not.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// admit counts the request and gives the failure due, if any.
func (s *Server) admit(w http.ResponseWriter) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	if len(s.failures) == 0 {
		return true
	}
	f := s.failures[0]
	s.failures = s.failures[1:]
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	for k, v := range f.Header {
		w.Header().Set(k, v)
	}
	http.Error(w, f.Body, f.Code)
	return false
}

func (s *Server) accept(w http.ResponseWriter, st Status) {
	s.mu.Lock()
	st.Time = orNow(s.Now)
	s.statuses = append(s.statuses, st)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(`{"id":1}`))
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) ([]byte, bool) {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		http.Error(w, `{"message":"want JSON"}`, http.StatusUnsupportedMediaType)
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		http.Error(w, `{"message":"Problems parsing JSON"}`, http.StatusBadRequest)
		return nil, false
	}
	return b, true
}

// github is POST /repos/{owner}/{repo}/statuses/{sha}, as GitHub, Gitea
// and Forgejo answer it.
func (s *Server) github(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w) {
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+s.Token {
		http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
		return
	}
	var body struct {
		State, Context, Description string
		TargetURL                   string `json:"target_url"`
	}
	b, ok := readJSON(w, r, &body)
	if !ok {
		return
	}
	if !slices.Contains([]string{"pending", "success", "failure", "error"}, body.State) ||
		utf8.RuneCountInString(body.Description) > 140 || !isSHA(r.PathValue("sha")) {
		http.Error(w, `{"message":"Validation Failed"}`, http.StatusUnprocessableEntity)
		return
	}
	s.accept(w, Status{API: "github", Repo: r.PathValue("owner") + "/" + r.PathValue("repo"), Commit: r.PathValue("sha"),
		State: body.State, Context: body.Context, Description: body.Description, TargetURL: body.TargetURL, Body: b})
}

// gitlab is POST /projects/{id}/statuses/{sha}; id is a number or a
// URL-encoded path, one segment.
func (s *Server) gitlab(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w) {
		return
	}
	if r.Header.Get("PRIVATE-TOKEN") != s.Token {
		http.Error(w, `{"message":"401 Unauthorized"}`, http.StatusUnauthorized)
		return
	}
	var body struct {
		State, Name, Description string
		TargetURL                string `json:"target_url"`
	}
	b, ok := readJSON(w, r, &body)
	if !ok {
		return
	}
	if !slices.Contains([]string{"pending", "running", "success", "failed", "canceled"}, body.State) || !isSHA(r.PathValue("sha")) {
		http.Error(w, `{"message":"state is invalid"}`, http.StatusBadRequest)
		return
	}
	// the state the name holds now: GitLab refuses to post it again
	s.mu.Lock()
	var last string
	for _, st := range s.statuses {
		if st.API == "gitlab" && st.Commit == r.PathValue("sha") && st.Context == body.Name {
			last = st.State
		}
	}
	s.mu.Unlock()
	if last == body.State && last != "success" && last != "failed" {
		http.Error(w, `{"message":"Cannot transition status via :run from :running"}`, http.StatusBadRequest)
		return
	}
	s.accept(w, Status{API: "gitlab", Repo: r.PathValue("id"), Commit: r.PathValue("sha"), State: body.State,
		Context: body.Name, Description: body.Description, TargetURL: body.TargetURL, Body: b})
}

// webhook is a receiver of the documented JSON body, checking the bearer
// token (when Token is set) and the signature (when Secret is set).
func (s *Server) webhook(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w) {
		return
	}
	if s.Token != "" && r.Header.Get("Authorization") != "Bearer "+s.Token {
		http.Error(w, "bad token", http.StatusUnauthorized)
		return
	}
	var body struct {
		Commit, Context, State, Outcome, Description, TargetURL string
	}
	b, ok := readJSON(w, r, &body)
	if !ok {
		return
	}
	if s.Secret != "" {
		m := hmac.New(sha256.New, []byte(s.Secret))
		m.Write(b)
		want := "sha256=" + hex.EncodeToString(m.Sum(nil))
		if !hmac.Equal([]byte(r.Header.Get("X-Addon-Operator-Signature-256")), []byte(want)) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
	}
	s.accept(w, Status{API: "webhook", Commit: body.Commit, State: body.State, Context: body.Context,
		Description: body.Description, TargetURL: body.TargetURL, Body: b})
}

func isSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}
