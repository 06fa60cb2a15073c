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
