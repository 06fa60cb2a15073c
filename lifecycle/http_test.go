package lifecycle

import (
	"strings"
	"testing"
)

// The wiring of statusapi before Run: /status answers, and a part with
// nothing to say is left out (no "webhooks": null from a nil
// *WebhookStatus in the adapter).
func TestStatusWiredBeforeRun(t *testing.T) {
	t.Parallel()
	get := serveHandler(t, New(Config{Logger: quiet()}, nil, nil, nil).Handler(HTTPOptions{}))
	code, body := get("/status")
	if code != 200 || strings.Contains(body, `"webhooks"`) || !strings.Contains(body, `"ready": false`) {
		t.Fatalf("/status %d:\n%s", code, body)
	}
	if code, _ := get("/readyz"); code != 503 {
		t.Fatalf("/readyz %d before Run, want 503", code)
	}
}
