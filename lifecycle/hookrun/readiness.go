package hookrun

import (
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
)

// isReadinessHook: a batch executable's readiness hook of a module.
func isReadinessHook(h *loader.Hook) bool {
	return h.Module != "" && len(h.Args) == 2 && h.Args[0] == "hook" && h.Args[1] == loader.BatchReadyID
}

// observeReadiness records a run of a module's readiness hook as the
// module's runstate.Readiness (nothing for any other hook).
func (r *Runner) observeReadiness(h *loader.Hook, err error) {
	if !isReadinessHook(h) {
		return
	}
	rd := &runstate.Readiness{Ready: err == nil, Checked: r.opts.Now()}
	if err != nil {
		rd.Error = firstLine(err.Error())
		rd.Message = sdkErrorMessage(hookOutput(err))
	}
	r.opts.Modules.Update(h.Module, func(st *runstate.Module) { st.Readiness = rd })
}
