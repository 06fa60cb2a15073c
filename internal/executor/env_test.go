package executor

import (
	"slices"
	"strings"
	"testing"
)

// TestBaseEnvDropsCredentials: the operator's credential settings, and
// anything named like a secret, never reach a hook's environment.
func TestBaseEnvDropsCredentials(t *testing.T) {
	tests := []struct {
		name string
		kept bool
	}{
		{"GIT_URL", false},
		{"GIT_TOKEN_FILE", false},
		{"ADDON_OPERATOR_COMMIT_STATUS_URL", false},
		{"ADDON_OPERATOR_COMMIT_STATUS_TOKEN_FILE", false},
		{"ADDON_OPERATOR_COMMIT_STATUS_SECRET_FILE", false},
		{"MY_PASSWORD", false},
		{"VALUES_PATH", false},
		{"VALIDATING_WEBHOOK_SERVER_KEY", false},
		{"VALIDATING_WEBHOOK_SERVER_CERT", false},
		{"VALIDATING_WEBHOOK_CLIENT_CA", false},
		{"CONVERSION_WEBHOOK_SERVER_KEY", false},
		{"CONVERSION_WEBHOOK_SERVER_CERT", false},
		{"CONVERSION_WEBHOOK_CA", false},
		{"ADDON_OPERATOR_ADMISSION_SERVER_CERTS_DIR", false},
		{"TLS_PRIVATE_KEY_PATH", false},
		{"GOOGLE_APPLICATION_CREDENTIALS", false},
		{"SIGNING_KEY", false},
		{"VALIDATING_WEBHOOK_LISTEN_PORT", true},
		{"SSL_CERT_FILE", true},
		{"KEYBOARD", true},
		{"ADDON_OPERATOR_CLUSTER_NAME", true},
		{"LOG_LEVEL", true},
	}
	for _, tt := range tests {
		t.Setenv(tt.name, "x")
	}
	env := BaseEnv()
	for _, tt := range tests {
		kept := slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, tt.name+"=") })
		if kept != tt.kept {
			t.Errorf("%s: kept = %v, want %v", tt.name, kept, tt.kept)
		}
	}
}
