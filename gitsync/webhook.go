package gitsync

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
)

// maxWebhookBody bounds what a webhook request may send.
const maxWebhookBody = 1 << 20

// WebhookHandler serves POST /hooks/git: a request signed with the secret
// in GitHub's X-Hub-Signature-256 format (sha256=<hex HMAC of the body>)
// triggers a sync at once; anything else gets 401 and changes nothing.
func WebhookHandler(secret []byte, trigger func()) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxWebhookBody))
		if err != nil {
			http.Error(w, "read body", http.StatusBadRequest)
			return
		}
		sig, ok := strings.CutPrefix(r.Header.Get("X-Hub-Signature-256"), "sha256=")
		got, err := hex.DecodeString(sig)
		mac := hmac.New(sha256.New, secret)
		mac.Write(body)
		if !ok || err != nil || !hmac.Equal(got, mac.Sum(nil)) {
			http.Error(w, "bad or missing signature", http.StatusUnauthorized)
			return
		}
		trigger()
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte("sync triggered\n"))
	})
}

// Sign is the X-Hub-Signature-256 value for a body (for clients and tests).
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}
