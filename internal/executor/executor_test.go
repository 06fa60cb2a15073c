package executor

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hook.sh")
	if err := os.WriteFile(p, []byte("#!/usr/bin/env bash\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRun(t *testing.T) {
	t.Setenv("GIT_PASSWORD_FILE", "/secret/pw")
	t.Setenv("MY_API_TOKEN", "abc")
	t.Setenv("VALUES_PATH", "/stale")
	t.Setenv("VALIDATING_WEBHOOK_SERVER_KEY", "/validating-certs/tls.key")
	t.Setenv("CONVERSION_WEBHOOK_SERVER_KEY", "/conversion-certs/tls.key")
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil)).With("hook", "h.sh")
	tests := []struct {
		name    string
		body    string
		env     []string
		capture bool
		timeout time.Duration
		want    string
		wantErr string
	}{
		{name: "captured stdout", body: `echo '{"onStartup":1}'`, capture: true, want: "{\"onStartup\":1}\n"},
		{name: "env is scrubbed and documented vars set", capture: true, env: []string{"VALUES_PATH=/v"},
			body: `echo "${GIT_PASSWORD_FILE:-none} ${MY_API_TOKEN:-none} $VALUES_PATH"`, want: "none none /v\n"},
		{name: "webhook server keys are not a hook's", capture: true,
			body: `echo "${VALIDATING_WEBHOOK_SERVER_KEY:-none} ${CONVERSION_WEBHOOK_SERVER_KEY:-none}"`, want: "none none\n"},
		{name: "failure carries stderr", body: "echo broken >&2; exit 3", wantErr: "exit status 3: broken"},
		{name: "timeout kills the group", body: "sleep 30 & sleep 30; wait", timeout: 300 * time.Millisecond, wantErr: "timed out after 300ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			out, err := Run(t.Context(), Command{Path: script(t, tt.body), Env: tt.env, CaptureStdout: tt.capture, Timeout: tt.timeout, Logger: logger})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if tt.timeout > 0 && !errors.Is(err, ErrTimeout) {
					t.Fatalf("not ErrTimeout: %v", err)
				}
				if time.Since(start) > 10*time.Second {
					t.Fatal("killed process group kept Run waiting")
				}
				return
			}
			if err != nil || string(out) != tt.want {
				t.Fatalf("out = %q, err = %v", out, err)
			}
		})
	}
	if !strings.Contains(logs.String(), `msg=broken hook=h.sh output=stderr`) {
		t.Fatalf("stderr not logged line by line with the hook name:\n%s", logs.String())
	}
}

func TestStdoutLoggedLineByLine(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	if _, err := Run(t.Context(), Command{Path: script(t, "echo one; printf two"), Logger: logger}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "msg=one output=stdout") || !strings.Contains(logs.String(), "msg=two output=stdout") {
		t.Fatalf("logs:\n%s", logs.String())
	}
}
