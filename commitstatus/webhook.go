package commitstatus

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"
)

// SignatureHeader carries a webhook body's HMAC-SHA256 in GitHub's
// format, sha256=<hex>, when a secret file is set.
const SignatureHeader = "X-Addon-Operator-Signature-256"

// WebhookOptions configure NewWebhook.
type WebhookOptions struct {
	URL string
	// Repository is what the body names as the repository (informative).
	Repository string
	// TokenFile, if set, holds a bearer token for the Authorization header.
	TokenFile string
	// SecretFile, if set, holds the HMAC key of SignatureHeader.
	SecretFile string
	// AllowHTTP: as GitHubOptions.AllowHTTP
	AllowHTTP []string
	Client    *http.Client
	// Now dates the body (default time.Now).
	Now func() time.Time
}

// WebhookBody is the JSON a webhook receives (docs/operator.md, "Commit
// status").
type WebhookBody struct {
	Commit     string `json:"commit"`
	Repository string `json:"repository,omitempty"`
	Context    string `json:"context"`
	Cluster    string `json:"cluster,omitempty"`
	Module     string `json:"module,omitempty"`
	// Ring is the cluster's rollout ring, when it has one.
	Ring *int `json:"ring,omitempty"`
	// State is the report's own (applying, applied, failed, progressing,
	// healthy, degraded, held); Outcome is it as pending, success or failure.
	State       string    `json:"state"`
	Outcome     string    `json:"outcome"`
	Description string    `json:"description"`
	TargetURL   string    `json:"targetURL,omitempty"`
	Time        time.Time `json:"time"`
}

// Webhook posts a WebhookBody to a URL of the user's.
type Webhook struct {
	url        string
	repository string
	token      secretFile
	secret     secretFile
	client     *http.Client
	now        func() time.Time
}

// NewWebhook checks the options and reads the files once.
func NewWebhook(o WebhookOptions) (*Webhook, error) {
	if _, err := checkURL("webhook URL", o.URL, o.AllowHTTP); err != nil {
		return nil, err
	}
	for _, f := range []string{o.TokenFile, o.SecretFile} {
		if _, err := secretFile(f).read(); err != nil {
			return nil, err
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Webhook{url: o.URL, repository: o.Repository, token: secretFile(o.TokenFile),
		secret: secretFile(o.SecretFile), client: client(o.Client), now: o.Now}, nil
}

// Post sends s as a WebhookBody, signed when a secret is set.
func (w *Webhook) Post(ctx context.Context, s Status) error {
	token, err := w.token.read()
	if err != nil {
		return fmt.Errorf("%w: %w", errTerminal, err)
	}
	key, err := w.secret.read()
	if err != nil {
		return fmt.Errorf("%w: %w", errTerminal, err)
	}
	body := marshal(WebhookBody{Commit: s.Commit, Repository: w.repository, Context: s.Context, Cluster: s.Cluster,
		Module: s.Module, Ring: s.Ring, State: string(s.State), Outcome: s.State.outcome(), Description: s.Description,
		TargetURL: s.TargetURL, Time: w.now().UTC()})
	headers := map[string]string{}
	if token != "" {
		headers["Authorization"] = "Bearer " + token
	}
	if key != "" {
		headers[SignatureHeader] = Sign([]byte(key), body)
	}
	return redacted(postJSON(ctx, w.client, w.url, headers, body), token, key)
}

// Sign is the SignatureHeader value of body under key.
func Sign(key, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}
