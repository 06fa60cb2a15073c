package lifecycle

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/addonops/addon-operator/lifecycle/binding"
	"github.com/addonops/addon-operator/lifecycle/driftcheck"
	"github.com/addonops/addon-operator/lifecycle/hookrun"
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/modulestatus"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/lifecycle/webhookrun"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
	"github.com/addonops/addon-operator/values"
	"github.com/addonops/addon-operator/webhook"
)

// ConfigBackend is where config values live (ConfigMap/addon-operator).
// Update and Watch report the version of the data (the ConfigMap's
// resourceVersion), so a late write's echo cannot undo a newer edit.
type ConfigBackend interface {
	Get(ctx context.Context) (map[string]string, error)
	Update(ctx context.Context, fn func(map[string]string) (map[string]string, error)) (map[string]string, string, error)
	Watch(ctx context.Context, onChange func(data map[string]string, version string))
}

// Helm installs and removes module releases.
type Helm interface {
	Upgrade(ctx context.Context, r kube.Release) (kube.Result, error)
	// ReadAhead starts what the module's next Upgrade would read from the
	// cluster first, to run beside its hooks (docs/performance.md).
	ReadAhead(name string)
	Uninstall(ctx context.Context, name string) (bool, error)
	// Purge removes the release of a module that is gone, only when it is
	// labelled as the operator's.
	Purge(ctx context.Context, name string) (bool, error)
	Releases(ctx context.Context) ([]string, error)
	// Has reports whether a release of the module's name exists that the
	// operator may delete (its own or the original addon-operator's).
	Has(ctx context.Context, name string) (bool, error)
	// AbsentResources lists the missing resources of a module's release.
	AbsentResources(ctx context.Context, name string) ([]string, error)
}

// CRDInstaller applies the CustomResourceDefinitions of a module's crds/
// directory, reporting how many it created or updated; files, when not
// nil, is the module's directory as the loader reads it (ChartFS).
type CRDInstaller interface {
	Ensure(ctx context.Context, module, moduleDir string, files fs.FS) (int, error)
}

var (
	_ CRDInstaller  = (*kube.CRDs)(nil)
	_ ConfigBackend = (*kube.ConfigMap)(nil)
	_ ConfigBackend = (*kube.ClusterValues)(nil)
	_ Helm          = (*kube.Helm)(nil)
)

// Config configures an Operator.
type Config struct {
	ModulesDir     string
	GlobalHooksDir string
	// Root bounds symlinks in the tree ("" bounds each directory by itself).
	Root        string
	HookTimeout time.Duration
	RetryMin    time.Duration
	RetryMax    time.Duration
	// TempDir holds the files handed to hooks (default: the system's).
	TempDir  string
	Logger   *slog.Logger
	Registry *prometheus.Registry
	// ResourcesCheckInterval is the period of the absent-resources check
	// (auto-healing); zero turns it off.
	ResourcesCheckInterval time.Duration
	// Monitors starts the monitors of kubernetes bindings (nil: a hook
	// with kubernetes bindings fails with an error saying so).
	Monitors MonitorSource
	// PurgeLimit is how many modules one revision may purge: PurgeHalf
	// (the zero value), PurgeNone, or a number.
	PurgeLimit int
	// CRDs applies modules' crds/ directories (nil: not applied; Helm's
	// chart install still skips them).
	CRDs CRDInstaller
	// Events records Kubernetes Events on the values ConfigMap (nil: none).
	Events EventRecorder
	// ModuleEvents records the Events about one module (drift, a failed
	// run or health wait, a release conflict) on its Module object when
	// it has one (nil: on Events).
	ModuleEvents ModuleEventRecorder
	// SourceEvents records the purge guard's refusals on the source
	// ConfigMap, where they are confirmed (nil: none).
	SourceEvents EventRecorder
	// ObjectPatcher applies hooks' KUBERNETES_PATCH_PATH operations (nil:
	// a hook that writes any fails).
	ObjectPatcher ObjectPatcher
	// ParallelModules bounds how many modules of one weight run at once
	// (0: the number of CPUs; 1: one by one).
	ParallelModules int
	// Now and After are the clock of retries, schedules and the
	// absent-resources check (tests drive them without sleeping).
	After func(time.Duration) <-chan time.Time
	Now   func() time.Time
	// Health follows the health of modules' releases (nil: none).
	Health HealthTracker
	// Drift checks modules' releases for drift on the auto-healing
	// interval and on the edits Edits holds (nil: no drift checks); DriftMode is what is done about it
	// by default, DriftWarn or DriftCorrect (the default), which a
	// module's <module>Drift ConfigMap key overrides (docs/operator.md,
	// "Drift").
	// Edits is where the health tracker tells edits of release objects
	// (nil: no checks on edits); the drift checks on edits take them.
	Edits     *EditInbox
	Drift     DriftDetector
	DriftMode string
	// DriftHeld, if set, says while drift is reported and not corrected
	// whatever the mode: the source is suspended (docs/operator.md,
	// "Suspend, resume and sync").
	DriftHeld func() bool
	// ConfigHold, if set, holds a ConfigMap (or values Secret) edit
	// while its predicate says, and why: a change window is closed
	// (docs/operator.md, "Fleets"). The edit is kept and applied when it
	// opens.
	ConfigHold *ConfigHold
	// OnRevisionState, if set, is told when a revision starts applying,
	// has been applied, or failed (revisionstate.go). It is called from
	// the tasks of "main" and must not block.
	OnRevisionState func(RevisionState)
	// Webhooks registers the webhooks the running tree binds (nil: no
	// webhook server; a tree that binds one gets an error on /status).
	Webhooks WebhookRegistrar
	// Redactor hides secret config values wherever values are shown: it
	// is told each tree's (nil: none; docs/operator.md, "Secrets").
	Redactor *values.Redactor
	// ModuleObjects writes the Module status objects (nil: none;
	// docs/operator.md, "Module objects").
	ModuleObjects modulestatus.Client
	// driftQuiet and driftSpacing bound drift checks on edits (tests
	// shorten them; 0: driftcheck's defaults).
	driftQuiet, driftSpacing time.Duration
}

// withDefaults fills in what a Config leaves unset.
func (cfg Config) withDefaults() Config {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.HookTimeout <= 0 {
		cfg.HookTimeout = 10 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.After == nil {
		cfg.After = time.After
	}
	if cfg.DriftMode == "" {
		cfg.DriftMode = DriftCorrect
	}
	if cfg.ModuleEvents == nil && cfg.Events != nil {
		cfg.ModuleEvents = onConfigMap{cfg.Events}
	}
	if cfg.TempDir == "" {
		cfg.TempDir = os.TempDir()
	}
	return cfg
}

// Operator runs the documented lifecycle over one tree. It wires its
// parts and is what the rest of the program talks to: the steps (the task
// handlers of docs/lifecycle.md, steps.go), the bindings that turn
// kubernetes events and schedules into hook runs (lifecycle/binding),
// the hook runner (lifecycle/hookrun) and the holders of the running
// state they are handed (lifecycle/runstate).
type Operator struct {
	cfg     Config
	logger  *slog.Logger
	metrics *metrics.Recorder
	trees   *runstate.Trees
	modules *runstate.Modules
	queues  *runstate.Queues
	run     *hookrun.Runner
	bind    *binding.Bindings
	steps   *steps
	tree    *treeSteps
	purge   *purgeGuard
	drift   *driftcheck.Checker
	hooks   *webhookrun.Webhooks
	objects *modulestatus.Writer // nil: no Module objects
	backend ConfigBackend
	config  *configDrift
}

// New prepares an Operator; Run starts it.
func New(cfg Config, backend ConfigBackend, helm Helm, ld *loader.Loader) *Operator {
	cfg = cfg.withDefaults()
	if ld == nil {
		ld = loader.New(loader.WithLogger(cfg.Logger))
	}
	trees, modules, queues := &runstate.Trees{Redactor: cfg.Redactor}, runstate.NewModules(), &runstate.Queues{}
	m := metrics.New(cfg.Registry, trees.RevisionInfo)
	run := newRunner(cfg, hookrun.Options{Config: backend, Metrics: m, Trees: trees, Modules: modules})
	followUps := &bindingFollowUps{} // its steps are set below: they are built with bind
	bind := binding.New(binding.Options{Logger: cfg.Logger, Now: cfg.Now, After: cfg.After, Monitors: cfg.Monitors,
		Metrics: m, Trees: trees, Modules: modules, Queues: queues, Runner: bindingRunner{run}, FollowUps: followUps})
	purge := &purgeGuard{limit: cfg.PurgeLimit, logger: cfg.Logger, events: cfg.SourceEvents}
	report := &revisionReporter{on: cfg.OnRevisionState, trees: trees, modules: modules, held: purge.discoveryHeld}
	drift := newDriftChecker(cfg, driftcheck.Options{Metrics: m, Trees: trees, Modules: modules, Queues: queues})
	rec := &recorder{metrics: m, modules: modules, report: report, health: cfg.Health, now: cfg.Now,
		failed: runFailures{warn: cfg.moduleWarning, onObject: cfg.moduleEventOnObject}}
	waits := &healthWaits{cfg: cfg, logger: cfg.Logger, metrics: m, trees: trees, modules: modules}
	mods := &moduleSteps{cfg: cfg, logger: cfg.Logger, metrics: m, trees: trees, modules: modules, queues: queues,
		run: run, bind: bind, helm: helm, rec: rec, waits: waits}
	st := &steps{cfg: cfg, logger: cfg.Logger, metrics: m, trees: trees, modules: modules, queues: queues,
		run: run, checks: newSettingsChecks(cfg, cfg.Logger, trees), bind: bind, helm: helm, mods: mods, purge: purge, drift: drift, rec: rec, phase: newReloadPhase()}
	ts := &treeSteps{cfg: cfg, logger: cfg.Logger, metrics: m, trees: trees, modules: modules, queues: queues,
		run: run, bind: bind, loader: ld, steps: st, mods: mods, purge: purge, rec: rec}
	followUps.s = st
	cfg.Registry.MustRegister(bind.Collector(), stateCollector{modules: modules, tree: ts, purge: purge})
	wh := webhookrun.New(webhookrun.Options{Logger: cfg.Logger, Trees: trees, Modules: modules, Registrar: cfg.Webhooks,
		Runner: webhookHookRunner{run}, Snapshots: bind, Now: cfg.Now, After: cfg.After})
	return &Operator{cfg: cfg, logger: cfg.Logger, metrics: m, trees: trees, modules: modules, queues: queues,
		run: run, bind: bind, steps: st, tree: ts, purge: purge, drift: drift, hooks: wh, backend: backend,
		config:  &configDrift{trees: trees, metrics: m, events: cfg.Events, logger: cfg.Logger},
		objects: newModuleObjects(cfg, trees, modules, drift)}
}

// Webhooks answers the webhook server's requests (lifecycle/webhookrun).
func (o *Operator) Webhooks() webhook.Reviewer { return o.hooks }

// Run adopts the revision handed over by TreeChanged (or loads the
// configured directories when there is none), reads and validates the
// config values, runs the start-up steps and then reacts to events until
// ctx is done. Invalid configuration or a tree that does not load at
// start-up is an error: the operator stops (docs/operator.md, "Events").
func (o *Operator) Run(ctx context.Context) error {
	rev := o.tree.revs.takeIncoming()
	model := rev.Model
	var err error
	if model == nil {
		if model, err = o.tree.load(ctx); err != nil {
			return fmt.Errorf("load modules: %w", err)
		}
	}
	o.trees.Decrypted(model)
	data, err := o.backend.Get(ctx)
	if err != nil {
		return err
	}
	eff, overrides, err := runstate.Effective(model, data)
	if err != nil {
		return fmt.Errorf("invalid configuration at start-up: %w", err)
	}
	store, err := runstate.Admit(model, eff, nil)
	if err != nil {
		return fmt.Errorf("invalid configuration at start-up: %w", err)
	}
	o.modules.Reset(model)
	o.trees.Start(&runstate.Tree{Model: model, Store: store, ClusterData: data, ConfigData: eff, Overrides: overrides,
		Rev: gitsync.Revision{Commit: rev.Commit, Ref: rev.Ref, Dir: rev.Dir}})
	o.metrics.BindingsOf(model)
	o.logger.Info("loaded modules", "modules", len(model.Modules), "global_hooks", len(model.Global.Hooks), "revision", rev.Commit)
	_ = o.tree.rec.record(ctx, outcome{What: revisionApplying, Commit: rev.Commit})
	// monitors live with ctx; schedules and monitors follow the running
	// state from now on (lifecycle/binding)
	o.bind.Start(ctx)
	defer o.bind.Stop()
	queues := queue.NewSet(ctx, queue.Options{
		RetryMin: o.cfg.RetryMin, RetryMax: o.cfg.RetryMax, Logger: o.logger, After: o.cfg.After, Now: o.cfg.Now,
		OnLength: func(q string, n int) { o.metrics.QueueLength.WithLabelValues(q).Set(float64(n)) },
		OnStart: func(q string, t *queue.Task, waited time.Duration) {
			o.metrics.TaskWait.WithLabelValues(t.Key.Module, t.Key.Hook, t.Key.Binding, q).Add(waited.Seconds())
		},
		OnAction: func(q, action string, took time.Duration) {
			o.metrics.QueueActionSeconds.WithLabelValues(q, action).Observe(took.Seconds())
		},
	})
	go o.metrics.Tick(ctx, o.cfg.After)
	go o.config.run(ctx)
	// a revision reported while the first one was loading
	pending := o.tree.revs.attach(queues, o.queues)
	main := queues.Main()
	main.Add(o.steps.globalHookTasks(loader.OnStartup)...)
	main.Add(o.steps.reloadAllTask())
	if pending != nil {
		o.TreeChanged(*pending)
	}

	var wg sync.WaitGroup
	wg.Go(func() { o.steps.healLoop(ctx, o.cfg.ResourcesCheckInterval) })
	wg.Go(func() { o.drift.Run(ctx) })
	wg.Go(func() {
		o.backend.Watch(ctx, func(data map[string]string, version string) { o.steps.onConfigChange(ctx, data, version) })
	})
	wg.Go(func() { o.hooks.Run(ctx) })
	wg.Go(func() { o.steps.releaseConfig(ctx) })
	// hook runs' temp directories made ahead and removed after the run
	wg.Go(func() { o.run.Run(ctx) })
	if o.objects != nil {
		wg.Go(func() { o.objects.Run(ctx) })
	}
	<-ctx.Done()
	queues.Wait()
	wg.Wait()
	return nil
}

// Ready is true once the first 'reload all modules' finished.
func (o *Operator) Ready() bool { return o.steps.converged() }

// Queues exposes the task queues; nil until Run has created them.
func (o *Operator) Queues() *queue.Set { return o.queues.Get() }
