package executor

import (
	"os"
	"strings"
)

// secretVars are the operator's own settings that hooks must not see: they
// name credential files or hold secrets.
var secretVars = map[string]bool{
	"GIT_SSH_KEY_FILE": true, "GIT_KNOWN_HOSTS_FILE": true, "GIT_USERNAME": true,
	"GIT_PASSWORD_FILE": true, "GIT_TOKEN_FILE": true, "GIT_WEBHOOK_SECRET_FILE": true,
	"GIT_VERIFY_KEYS_DIR": true, "GIT_URL": true,
	// a webhook's URL may itself be its credential (a secret path)
	"ADDON_OPERATOR_COMMIT_STATUS_URL": true,
}

// hookVars are set per run; stale values from the operator's own
// environment must not leak into a hook.
var hookVars = map[string]bool{
	"BINDING_CONTEXT_PATH": true, "WORKING_DIR": true, "CONFIG_VALUES_PATH": true, "VALUES_PATH": true,
	"CONFIG_VALUES_JSON_PATCH_PATH": true, "VALUES_JSON_PATCH_PATH": true, "MODULE_ENABLED_RESULT": true,
	"VALIDATING_RESPONSE_PATH": true, "ADMISSION_RESPONSE_PATH": true, "CONVERSION_RESPONSE_PATH": true,
}

// BaseEnv is the operator's environment without its credential settings,
// anything that looks like a secret, or hook variables.
func BaseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		upper := strings.ToUpper(name)
		if secretVars[name] || hookVars[name] ||
			strings.Contains(upper, "PASSWORD") || strings.Contains(upper, "SECRET") || strings.Contains(upper, "TOKEN") {
			continue
		}
		out = append(out, kv)
	}
	return out
}
