package gitsync

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestWebhook(t *testing.T) {
	secret := []byte("hook-secret")
	triggered := 0
	h := webhook(func() ([]byte, error) { return secret, nil }, newReplayGuard(time.Now), func() { triggered++ })
	body := `{"ref":"refs/heads/main"}`
	tests := []struct {
		name, method, sig string
		want              int
	}{
		{name: "signed", method: "POST", sig: Sign(secret, []byte(body)), want: http.StatusAccepted},
		{name: "missing signature", method: "POST", want: http.StatusUnauthorized},
		{name: "wrong secret", method: "POST", sig: Sign([]byte("other"), []byte(body)), want: http.StatusUnauthorized},
		{name: "sha1 format", method: "POST", sig: "sha1=abc", want: http.StatusUnauthorized},
		{name: "not hex", method: "POST", sig: "sha256=zz", want: http.StatusUnauthorized},
		{name: "GET", method: "GET", want: http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "/hooks/git", strings.NewReader(body))
			if tt.sig != "" {
				req.Header.Set("X-Hub-Signature-256", tt.sig)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Fatalf("status = %d, want %d", rec.Code, tt.want)
			}
		})
	}
	if triggered != 1 {
		t.Fatalf("triggered %d times, want 1", triggered)
	}
}

func post(t *testing.T, h http.Handler, sig, body string) int {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/hooks/git", strings.NewReader(body))
	if sig != "" {
		req.Header.Set("X-Hub-Signature-256", sig)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

func writeSecret(t *testing.T, path, secret string) {
	t.Helper()
	// like a Secret volume: the new file replaces the old in one rename
	tmp := path + ".tmp"
	must(t, os.WriteFile(tmp, []byte(secret), 0o600))
	must(t, os.Rename(tmp, path))
}

func TestNewWebhookRefusesUnusableSecret(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content string
		missing       bool
		want          string
	}{
		{name: "empty", content: "", want: "empty"},
		{name: "whitespace only", content: " \n\t\n", want: "empty"},
		{name: "missing", missing: true, want: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
			if !tt.missing {
				writeSecret(t, path, tt.content)
			}
			h, err := NewWebhook(path, func() {})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("NewWebhook = %v, %v; want an error saying %q and naming the file", h, err, tt.want)
			}
		})
	}
}

// A rotated secret takes effect at the next request, without a restart;
// a secret file emptied while running refuses everything.
func TestNewWebhookRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	writeSecret(t, path, "old-secret\n")
	var triggered atomic.Int32
	var logs bytes.Buffer // written by the handler, read once it has returned
	h, err := NewWebhook(path, func() { triggered.Add(1) }, WebhookLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	must(t, err)
	body := `{"ref":"refs/heads/main"}`
	oldSig, newSig := Sign([]byte("old-secret"), []byte(body)), Sign([]byte("new-secret"), []byte(body))
	steps := []struct {
		name, secret string // secret: rotate to it first ("-": leave the file alone)
		sig          string
		want         int
	}{
		{name: "old key", secret: "-", sig: oldSig, want: http.StatusAccepted},
		{name: "unsigned", secret: "-", want: http.StatusUnauthorized},
		{name: "old key after rotation", secret: "new-secret\n", sig: oldSig, want: http.StatusUnauthorized},
		{name: "new key after rotation", secret: "-", sig: newSig, want: http.StatusAccepted},
		{name: "same size, in place", secret: "newer-key!\n", sig: Sign([]byte("newer-key!"), []byte(body)), want: http.StatusAccepted},
		{name: "emptied file", secret: "", sig: Sign(nil, []byte(body)), want: http.StatusServiceUnavailable},
		{name: "emptied file, old key", secret: "-", sig: newSig, want: http.StatusServiceUnavailable},
		{name: "restored", secret: "new-secret", sig: newSig, want: http.StatusAccepted},
	}
	for _, st := range steps {
		if st.secret != "-" {
			if strings.Contains(st.name, "in place") {
				must(t, os.WriteFile(path, []byte(st.secret), 0o600))
			} else {
				writeSecret(t, path, st.secret)
			}
		}
		if code := post(t, h, st.sig, body); code != st.want {
			t.Fatalf("%s: status = %d, want %d", st.name, code, st.want)
		}
	}
	if n := triggered.Load(); n != 4 {
		t.Fatalf("triggered %d times, want 4", n)
	}
	// once per change of state, not per request
	if n := strings.Count(logs.String(), "webhook secret unusable"); n != 1 {
		t.Fatalf("%d unusable-secret logs, want 1:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), "usable again"); n != 1 {
		t.Fatalf("%d usable-again logs, want 1:\n%s", n, logs.String())
	}
}

// NewWebhook answers like webhook for a usable secret.
func TestNewWebhookRequests(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	writeSecret(t, path, "hook-secret\n")
	h, err := NewWebhook(path, func() {})
	must(t, err)
	body := `{"ref":"refs/heads/main"}`
	tests := []struct {
		name, sig string
		want      int
	}{
		{name: "signed, newline trimmed", sig: Sign([]byte("hook-secret"), []byte(body)), want: http.StatusAccepted},
		{name: "signed with the newline", sig: Sign([]byte("hook-secret\n"), []byte(body)), want: http.StatusUnauthorized},
		{name: "missing", want: http.StatusUnauthorized},
		{name: "sha1", sig: "sha1=abc", want: http.StatusUnauthorized},
		{name: "not hex", sig: "sha256=zz", want: http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code := post(t, h, tt.sig, body); code != tt.want {
				t.Fatalf("status = %d, want %d", code, tt.want)
			}
		})
	}
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/hooks/git", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %d", rec.Code)
	}
}

// A delivery whose ID was seen in the window is refused, whichever forge's
// header carries it, signed or not; an unsigned one is not remembered.
func TestWebhookReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	writeSecret(t, path, "hook-secret\n")
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var triggered atomic.Int32
	h, err := NewWebhook(path, func() { triggered.Add(1) }, WebhookClock(func() time.Time { return now }))
	must(t, err)
	send := func(header, id, body string, signed bool) int {
		t.Helper()
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/hooks/git", strings.NewReader(body))
		if signed {
			req.Header.Set("X-Hub-Signature-256", Sign([]byte("hook-secret"), []byte(body)))
		}
		if header != "" {
			req.Header.Set(header, id)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	steps := []struct {
		name, header, id, body string
		unsigned               bool
		advance                time.Duration
		want                   int
	}{
		{name: "github, first", header: "X-GitHub-Delivery", id: "d1", body: `{"after":"a"}`, want: http.StatusAccepted},
		{name: "github, replayed", header: "X-GitHub-Delivery", id: "d1", body: `{"after":"a"}`, want: http.StatusConflict},
		{name: "same ID, another body", header: "X-GitHub-Delivery", id: "d1", body: `{"after":"b"}`, want: http.StatusConflict},
		{name: "another ID", header: "X-GitHub-Delivery", id: "d2", body: `{"after":"a"}`, want: http.StatusAccepted},
		{name: "gitea", header: "X-Gitea-Delivery", id: "g1", body: `{}`, want: http.StatusAccepted},
		{name: "gitea, replayed", header: "X-Gitea-Delivery", id: "g1", body: `{}`, want: http.StatusConflict},
		{name: "gitlab", header: "X-Gitlab-Event-UUID", id: "u1", body: `{}`, want: http.StatusAccepted},
		{name: "gitlab, replayed", header: "X-Gitlab-Event-UUID", id: "u1", body: `{}`, want: http.StatusConflict},
		{name: "unsigned, new ID", header: "X-GitHub-Delivery", id: "d3", body: `{}`, unsigned: true, want: http.StatusUnauthorized},
		{name: "signed, that ID", header: "X-GitHub-Delivery", id: "d3", body: `{}`, want: http.StatusAccepted},
		{name: "no ID", body: `{}`, want: http.StatusAccepted},
		{name: "within the window", header: "X-GitHub-Delivery", id: "d1", body: `{"after":"a"}`, advance: replayWindow - time.Minute, want: http.StatusConflict},
		{name: "past the window", header: "X-GitHub-Delivery", id: "d1", body: `{"after":"a"}`, advance: time.Minute, want: http.StatusAccepted},
	}
	for _, st := range steps {
		now = now.Add(st.advance)
		if code := send(st.header, st.id, st.body, !st.unsigned); code != st.want {
			t.Fatalf("%s: status = %d, want %d", st.name, code, st.want)
		}
	}
	if n := triggered.Load(); n != 7 {
		t.Fatalf("triggered %d times, want 7", n)
	}
}

// The guard's memory is bounded: past replayMax IDs, the oldest are forgotten.
func TestReplayGuardIsBounded(t *testing.T) {
	g := newReplayGuard(time.Now)
	req := func(id string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/hooks/git", nil)
		r.Header.Set("X-GitHub-Delivery", id)
		return r
	}
	for i := range replayMax + 10 {
		if !g.fresh(req(fmt.Sprint(i))) {
			t.Fatalf("delivery %d refused", i)
		}
	}
	if len(g.seen) > replayMax || len(g.order) != len(g.seen) {
		t.Fatalf("%d IDs remembered (%d in order), want at most %d", len(g.seen), len(g.order), replayMax)
	}
	if g.fresh(req(fmt.Sprint(replayMax+9))) || !g.fresh(req("0")) {
		t.Fatal("the newest must be remembered and the oldest forgotten")
	}
}
