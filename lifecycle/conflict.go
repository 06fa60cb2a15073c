package lifecycle

import (
	"context"
	"errors"

	"github.com/addonops/addon-operator/lifecycle/runstate"

	"github.com/addonops/addon-operator/kube"
)

// EventRecorder records Kubernetes Events about the operator's
// configuration (on the values ConfigMap), for `kubectl describe`.
type EventRecorder interface {
	Warning(ctx context.Context, reason, message string) error
}

var _ EventRecorder = (*kube.ConfigMap)(nil)

// conflict handles an error of a module's Helm step. A release of the
// module's name that another tool owns is not retried: the module is
// Failed with the error on /status, addon_operator_release_conflicts is 1
// and an Event says so, once per conflict; the queue goes on, and the
// next run of the module tries again (docs/operator.md, "Taking over from
// addon-operator"). It reports whether err was such a conflict.
func (s *moduleSteps) conflict(ctx context.Context, name string, err error) bool {
	if !errors.Is(err, kube.ErrNotOurs) {
		return false
	}
	s.metrics.ReleaseConflicts.WithLabelValues(name).Set(1)
	fresh := false
	s.modules.Update(name, func(st *runstate.Module) {
		fresh = st.Conflict != err.Error()
		st.Conflict = err.Error()
	})
	if fresh {
		s.logger.Error("release name taken by another tool; the module's release is left alone", "module", name, "err", err)
		// best effort: the conflict is on /status and in the metric too
		s.cfg.moduleWarning(ctx, name, "ReleaseConflict", "module "+name+": "+err.Error())
	}
	return true
}

// resolved clears a module's release conflict after its Helm step worked.
func (s *moduleSteps) resolved(name string) {
	had := false
	s.modules.Update(name, func(st *runstate.Module) {
		had = st.Conflict != ""
		st.Conflict = ""
	})
	if had {
		s.metrics.ReleaseConflicts.WithLabelValues(name).Set(0)
	}
}
