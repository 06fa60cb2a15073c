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
	// the admission and conversion servers' TLS material: the private key
	// and the files beside it (docs/operator.md, "How hooks run")
	"VALIDATING_WEBHOOK_SERVER_KEY": true, "VALIDATING_WEBHOOK_SERVER_CERT": true,
	"VALIDATING_WEBHOOK_CA": true, "VALIDATING_WEBHOOK_CLIENT_CA": true,
	"CONVERSION_WEBHOOK_SERVER_KEY": true, "CONVERSION_WEBHOOK_SERVER_CERT": true,
	"CONVERSION_WEBHOOK_CA": true, "CONVERSION_WEBHOOK_CLIENT_CA": true,
	"ADDON_OPERATOR_ADMISSION_SERVER_CERTS_DIR": true,
}

// secretWords mark a variable as a secret, or the path of one, wherever
// they are in its name.
var secretWords = []string{"PASSWORD", "SECRET", "TOKEN", "PRIVATE_KEY", "CREDENTIAL"}

// secretSuffixes mark key files: GIT_SSH_KEY_FILE's kind under any name.
var secretSuffixes = []string{"_KEY", "_KEY_FILE", "_KEY_PATH"}

// hookVars are set per run; stale values from the operator's own
// environment must not leak into a hook.
var hookVars = map[string]bool{
	"BINDING_CONTEXT_PATH": true, "WORKING_DIR": true, "CONFIG_VALUES_PATH": true, "VALUES_PATH": true,
	"CONFIG_VALUES_JSON_PATCH_PATH": true, "VALUES_JSON_PATCH_PATH": true, "MODULE_ENABLED_RESULT": true,
	"VALIDATING_RESPONSE_PATH": true, "ADMISSION_RESPONSE_PATH": true, "CONVERSION_RESPONSE_PATH": true,
}

// BaseEnv is the operator's environment without its credential settings,
// anything that looks like a secret or a key file, or hook variables.
func BaseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if secretVars[name] || hookVars[name] || secretName(name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// secretName: the name looks like a secret's or a key file's.
func secretName(name string) bool {
	upper := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(upper, w) {
			return true
		}
	}
	for _, s := range secretSuffixes {
		if strings.HasSuffix(upper, s) {
			return true
		}
	}
	return false
}
