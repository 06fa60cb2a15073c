package gitsync

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// maxWebhookBody bounds what a webhook request may send.
const maxWebhookBody = 1 << 20

// errEmptySecret: an empty HMAC key is one anyone can sign with.
var errEmptySecret = errors.New("empty or blank, a key anyone could sign with")

// WebhookOption configures NewWebhook.
type WebhookOption func(*webhookConfig)

type webhookConfig struct {
	logger *slog.Logger
	now    func() time.Time
}

// WebhookClock sets the clock of the replay window (default time.Now).
func WebhookClock(now func() time.Time) WebhookOption {
	return func(c *webhookConfig) { c.now = now }
}

// WebhookLogger sets where NewWebhook reports a secret file that became
// unusable, or usable again (default slog.Default()).
func WebhookLogger(l *slog.Logger) WebhookOption {
	return func(c *webhookConfig) { c.logger = l }
}

// NewWebhook serves POST /hooks/git: a request signed with the secret in
// GitHub's X-Hub-Signature-256 format (sha256=<hex HMAC of the body>)
// triggers a sync at once; anything else gets 401 and changes nothing, and
// a delivery ID seen in the last day gets 409 (replayGuard). The
// secret is in secretFile (surrounding white space trimmed). The file is read again
// at every signed request, so a rotated secret (a Secret volume updated in
// place) takes effect without a restart; reading a small file costs little
// next to reading and hashing the body. A secret file that is missing or
// empty fails here, at start-up; one that becomes so while running gets
// every request 503 until it is fixed, never an empty key.
func NewWebhook(secretFile string, trigger func(), opts ...WebhookOption) (http.Handler, error) {
	c := webhookConfig{logger: slog.Default(), now: time.Now}
	for _, o := range opts {
		o(&c)
	}
	if _, err := readWebhookSecret(secretFile); err != nil {
		return nil, err
	}
	sf := &rotatingSecret{path: secretFile, logger: c.logger}
	return webhook(sf.key, newReplayGuard(c.now), trigger), nil
}

// readWebhookSecret reads the key from path; an empty one is an error.
func readWebhookSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("webhook secret: %w", err)
	}
	key := bytes.TrimSpace(b)
	if len(key) == 0 {
		return nil, fmt.Errorf("webhook secret %s: %w", path, errEmptySecret)
	}
	return key, nil
}

// rotatingSecret reads the key at each use and logs when its state changes,
// not at each request: anyone can send requests.
type rotatingSecret struct {
	path   string
	logger *slog.Logger

	mu      sync.Mutex
	lastErr string // "" while the key is usable
}

func (f *rotatingSecret) key() ([]byte, error) {
	key, err := readWebhookSecret(f.path)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if msg != f.lastErr {
		if err != nil {
			f.logger.Error("webhook secret unusable; webhooks are refused until it is fixed", "err", err)
		} else {
			f.logger.Info("webhook secret usable again")
		}
		f.lastErr = msg
	}
	return key, err
}

// webhook checks each request against the key of the moment, then its
// delivery ID against those seen (only a signed request is remembered, so
// unsigned noise cannot fill the guard). The signature's form is checked
// before the key is read, so unsigned noise costs nothing.
func webhook(key func() ([]byte, error), replays *replayGuard, trigger func()) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		got, ok := signature(r.Header.Get("X-Hub-Signature-256"))
		if !ok {
			http.Error(w, "bad or missing signature", http.StatusUnauthorized)
			return
		}
		secret, err := key()
		if err != nil {
			// no key to check against: the sender may be right, but nothing is accepted
			http.Error(w, "webhook secret unavailable", http.StatusServiceUnavailable)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxWebhookBody))
		if err != nil {
			http.Error(w, "read body", http.StatusBadRequest)
			return
		}
		if !hmac.Equal(got, mac(secret, body)) {
			http.Error(w, "bad or missing signature", http.StatusUnauthorized)
			return
		}
		if !replays.fresh(r) {
			http.Error(w, "delivery already seen", http.StatusConflict)
			return
		}
		trigger()
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte("sync triggered\n"))
	})
}

// signature decodes an X-Hub-Signature-256 value.
func signature(header string) ([]byte, bool) {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return nil, false
	}
	sig, err := hex.DecodeString(hexSig)
	return sig, err == nil && len(sig) == sha256.Size
}

func mac(secret, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return m.Sum(nil)
}

// Sign is the X-Hub-Signature-256 value for a body (for clients and tests).
func Sign(secret, body []byte) string {
	return "sha256=" + hex.EncodeToString(mac(secret, body))
}
