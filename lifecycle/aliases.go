package lifecycle

import (
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/prometheus/client_golang/prometheus"
)

// The running state's names that cmd and /status users know as
// lifecycle's (the state itself lives in lifecycle/runstate).
type ModuleState = runstate.ModuleState

// Module states, as /status shows them.
const (
	StateDisabled = runstate.StateDisabled
	StatePending  = runstate.StatePending
	StateRunning  = runstate.StateRunning
	StateReady    = runstate.StateReady
	StateFailed   = runstate.StateFailed
)

// Maintenance and drift modes (runstate.Maintenance, runstate.DriftMode).
const (
	NoResourceReconciliation = runstate.NoResourceReconciliation
	Managed                  = runstate.Managed
	DriftWarn                = runstate.DriftWarn
	DriftCorrect             = runstate.DriftCorrect
)

// RegisterClientMetrics registers client-go's request metrics
// (metrics.RegisterClientMetrics).
func RegisterClientMetrics(reg prometheus.Registerer) error {
	return metrics.RegisterClientMetrics(reg)
}
