package lifecycle

import (
	"log/slog"

	"github.com/addonops/addon-operator/lifecycle/binding"
	"github.com/addonops/addon-operator/lifecycle/hookrun"
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"
)

// steps are the task handlers of the documented lifecycle
// (docs/lifecycle.md) for the whole tree, one file per action: 'reload all
// modules' and its end (reloadall.go), global hooks (globalhooks.go),
// discovery (discover.go), then the module steps of moduleSteps; the
// reaction to ConfigMap edits (events.go) and auto-healing (heal.go). The
// reload's phase is reloadPhase's (phase.go), the kinds of the tasks
// taskkind's table, and what a step did is recorded by the recorder
// (record.go). A new revision's steps are treeSteps'.
type steps struct {
	cfg     Config
	logger  *slog.Logger
	metrics *metrics.Recorder
	trees   *runstate.Trees
	modules *runstate.Modules
	queues  *runstate.Queues
	run     *hookrun.Runner
	checks  *settingsChecks // settingscheck.go
	bind    *binding.Bindings
	helm    Helm
	mods    *moduleSteps
	purge   *purgeGuard  // purge.go
	drift   driftPass    // the interval's drift checks (heal.go)
	rec     *recorder    // the outcomes (record.go)
	phase   *reloadPhase // the reload's phase (phase.go)
}

// converged: the first 'reload all modules' finished.
func (s *steps) converged() bool { return closed(s.phase.convergedCh()) }
