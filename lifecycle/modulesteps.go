package lifecycle

import (
	"log/slog"

	"github.com/addonops/addon-operator/lifecycle/binding"
	"github.com/addonops/addon-operator/lifecycle/hookrun"
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"
)

// moduleSteps are the steps of one module (docs/lifecycle.md, steps 5–7),
// one file per action: 'module run' (modulerun.go: its CRDs, hooks and
// Helm release, alone or in a weight group, parallel.go), 'module delete'
// (moduledelete.go) and 'module purge' (modulepurge.go). Each returns an
// outcome that the recorder applies (record.go); release conflicts:
// conflict.go; health waits: healthwait.go.
type moduleSteps struct {
	cfg     Config
	logger  *slog.Logger
	metrics *metrics.Recorder
	trees   *runstate.Trees
	modules *runstate.Modules
	queues  *runstate.Queues
	run     *hookrun.Runner
	bind    *binding.Bindings
	helm    Helm
	rec     *recorder // the outcomes (record.go)
	waits   *healthWaits
}

// Reasons of the terminal errors of module steps (queue.TerminalError),
// as /status shows them.
const (
	// reasonReleaseConflict: another tool owns the module's release name
	// (conflict.go); the next run of the module tries again.
	reasonReleaseConflict = "ReleaseConflict"
	// reasonValuesRefused: the module's values fail its schemas before
	// Helm; the next change of them runs the module again.
	reasonValuesRefused = "ValuesRefused"
)
