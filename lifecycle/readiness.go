package lifecycle

import (
	"encoding/json"
	"strings"

	"github.com/addonops/addon-operator/lifecycle/runstate"

	"github.com/addonops/addon-operator/loader"
)

// Readiness is a readiness hook's last result (runstate.Readiness).
type Readiness = runstate.Readiness

// isReadinessHook: a batch executable's readiness hook of a module.
func isReadinessHook(h *loader.Hook) bool {
	return h.Module != "" && len(h.Args) == 2 && h.Args[0] == "hook" && h.Args[1] == loader.BatchReadyID
}

// observeReadiness records a run of a module's readiness hook (nothing for
// any other hook).
func (r *runner) observeReadiness(h *loader.Hook, err error) {
	if !isReadinessHook(h) {
		return
	}
	rd := &Readiness{Ready: err == nil, Checked: r.cfg.Now()}
	if err != nil {
		rd.Error = firstLine(err.Error())
		rd.Message = sdkErrorMessage(hookOutput(err))
	}
	r.modules.Update(h.Module, func(st *runstate.Module) { st.Readiness = rd })
}

// sdkErrorMessage is the message of the last line of a module-sdk
// executable's stderr when that line is its error object; "" otherwise,
// so no other output reaches /status (docs/security.md, "Who sees what").
func sdkErrorMessage(stderr string) string {
	var e struct {
		Message string `json:"message"`
	}
	if !lastLineJSON(stderr, &e) {
		return ""
	}
	return statusLine(e.Message)
}

// lastLineJSON decodes the last line of a module-sdk executable's stderr,
// where it writes its answer, into v.
func lastLineJSON(stderr string, v any) bool {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	return json.Unmarshal([]byte(strings.TrimSpace(lines[len(lines)-1])), v) == nil
}
