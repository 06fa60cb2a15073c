package binding

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
)

// HookRunner runs one hook for one binding (the hook runner): changed says
// its patches changed values or the ConfigMap, even when a later part of
// the run failed.
type HookRunner interface {
	RunHook(ctx context.Context, h *loader.Hook, binding string, bindingContext []map[string]any, allowFailure bool) (changed bool, err error)
}

// FollowUps is what bindings need of the steps: the work an event hook's
// result asks for, and when the first 'reload all modules' finished
// (global hooks' schedules start then).
type FollowUps interface {
	// QueueReloadAll: a global hook changed global values or *Enabled flags.
	QueueReloadAll()
	// QueueModuleRun: a module hook changed its module's values.
	QueueModuleRun(module string)
	// Converged is closed once the first 'reload all modules' finished.
	Converged() <-chan struct{}
}

// Options are what the bindings are built from.
type Options struct {
	Logger *slog.Logger
	// Now and After are the clock of schedules and rate limits.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	// Monitors starts the monitors of kubernetes bindings (nil: a hook
	// with kubernetes bindings fails with an error saying so).
	Monitors MonitorSource
	// MonitorSyncTimeout bounds the wait for a binding's first list
	// (0: a minute).
	MonitorSyncTimeout time.Duration
	Metrics            *metrics.Recorder
	Trees              *runstate.Trees
	Modules            *runstate.Modules
	Queues             *runstate.Queues
	Runner             HookRunner
	FollowUps          FollowUps
}

// Bindings are the event sources of hooks (doc.go).
//
// Cohesive: its 16 methods are the life of one binding, from its monitors'
// start and synchronization to its events, schedules and status; each
// part (monitors, schedules, snapshots) keeps its own state apart.
type Bindings struct {
	logger      *slog.Logger
	now         func() time.Time
	after       func(time.Duration) <-chan time.Time
	monitors    MonitorSource
	syncTimeout time.Duration
	metrics     *metrics.Recorder
	trees       *runstate.Trees
	modules     *runstate.Modules
	queues      *runstate.Queues
	run         HookRunner
	steps       FollowUps
	kube        kubeMonitors
	schedules   *schedules
	limits      hookLimits
	waiting     waitingEvents // coalesce.go
	// schedMu makes each syncSchedules' read of the state and its set one
	// step
	schedMu sync.Mutex
	runCtx  context.Context // Start's: monitors live as long as it
	wg      sync.WaitGroup  // the goroutine that follows the state
	// synced is the modules' version the last sync read (for tests,
	// which wait for a sync instead of sleeping)
	synced atomic.Uint64
}

// New builds the bindings; Start starts them.
func New(o Options) *Bindings {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.After == nil {
		o.After = time.After
	}
	if o.MonitorSyncTimeout <= 0 {
		o.MonitorSyncTimeout = time.Minute
	}
	return &Bindings{logger: o.Logger, now: o.Now, after: o.After, monitors: o.Monitors, syncTimeout: o.MonitorSyncTimeout,
		metrics: o.Metrics, trees: o.Trees, modules: o.Modules, queues: o.Queues, run: o.Runner, steps: o.FollowUps,
		kube: kubeMonitors{hooks: map[string]*hookMonitors{}}, schedules: newSchedules(o.Now, o.After),
		runCtx: context.Background()}
}

// Start lets monitors and schedules run until ctx is done, and starts the
// goroutine that keeps them in step with the running state (follow.go).
// It returns at once; call it after the first tree is set and before the
// first task runs.
func (bs *Bindings) Start(ctx context.Context) {
	bs.runCtx = ctx
	bs.schedules.start(ctx)
	bs.wg.Go(func() { bs.follow(ctx) })
}

// Stop waits, once ctx of Start is done, for the schedules and the
// following goroutine to end, then stops every monitor.
func (bs *Bindings) Stop() {
	bs.wg.Wait()
	bs.schedules.stop()
	for _, hm := range bs.kube.removeAll() {
		stopAll(hm)
	}
}

// Collector reports the running bindings' snapshots (kubemetrics.go).
func (bs *Bindings) Collector() prometheus.Collector { return snapshotCollector{&bs.kube} }
