package gitsync

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWebhook(t *testing.T) {
	secret := []byte("hook-secret")
	triggered := 0
	h := WebhookHandler(secret, func() { triggered++ })
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
