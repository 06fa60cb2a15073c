package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
	"github.com/addonops/addon-operator/values"
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
	Uninstall(ctx context.Context, name string) (bool, error)
	Releases() ([]string, error)
	// Has reports whether a release of the module's name exists that the
	// operator may delete (its own or the original addon-operator's).
	Has(name string) (bool, error)
	// AbsentResources lists the missing resources of a module's release.
	AbsentResources(name string) ([]string, error)
}

// CRDInstaller applies the CustomResourceDefinitions of a module's crds/
// directory, reporting how many it created or updated.
type CRDInstaller interface {
	Ensure(ctx context.Context, moduleDir string) (int, error)
}

var (
	_ CRDInstaller  = (*kube.CRDs)(nil)
	_ ConfigBackend = (*kube.ConfigMap)(nil)
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
	// Watcher starts the monitors of kubernetes bindings (nil: a hook
	// with kubernetes bindings fails with errNoWatcher).
	Watcher Watcher
	// PurgeLimit is how many modules one revision may purge: PurgeHalf
	// (the zero value), PurgeNone, or a number.
	PurgeLimit int
	// CRDs applies modules' crds/ directories (nil: not applied; Helm's
	// chart install still skips them).
	CRDs CRDInstaller
	// Events records Kubernetes Events (nil: none).
	Events EventRecorder
	// ParallelModules bounds how many modules of one weight run at once
	// (0: the number of CPUs; 1: one by one).
	ParallelModules int
	// Now and After are the clock of retries, schedules and the
	// absent-resources check (tests drive them without sleeping).
	After func(time.Duration) <-chan time.Time
	Now   func() time.Time
}

// Module states in /status.
const (
	StateDisabled = "Disabled"
	StatePending  = "Pending"
	StateRunning  = "Running"
	StateReady    = "Ready"
	StateFailed   = "Failed"
)

type moduleState struct {
	enabled     bool // enabled by the last discovery
	startupDone bool // onStartup hooks ran since it was enabled
	state       string
	lastError   string
	conflict    string // the release conflict last reported
	crdsHash    string // the module's hash when its CRDs were last applied
}

// Operator runs the documented lifecycle over one tree.
type Operator struct {
	cfg       Config
	logger    *slog.Logger
	loader    *loader.Loader
	backend   ConfigBackend
	helm      Helm
	metrics   *metrics
	queues    *queue.Set
	schedules *schedules
	kube      kubeMonitors
	runCtx    context.Context // Run's: monitors live as long as it

	// mu guards the state below. The model, the values store, the config
	// data and the revision change together, under mu, in adopt; config
	// changes and values patches reach the store under mu too.
	mu             sync.Mutex
	model          *loader.Model
	store          *values.Store
	rev            Revision                // the revision the model was loaded from
	prevCommit     string                  // the revision adopted before it
	incoming       *Revision               // the newest revision not yet adopted
	modules        map[string]*moduleState // by module name
	enabledModules []string
	ready          bool
	reloadStart    time.Time
	globalChanged  bool              // an afterAll hook changed global values in this reload
	configData     map[string]string // the ConfigMap data the store holds
	configVersion  string            // its resourceVersion
	treeError      string            // why the last changed tree was refused
	purgeConfirmed string            // the commit allowed past the purge guard
	purgeRefused   *Revision         // the revision the purge guard refused
	purgeError     string            // why the last discovery purged nothing
}

// New prepares an Operator; Run starts it.
func New(cfg Config, backend ConfigBackend, helm Helm, ld *loader.Loader) *Operator {
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
	if cfg.TempDir == "" {
		cfg.TempDir = os.TempDir()
	}
	if ld == nil {
		ld = loader.New(loader.WithLogger(cfg.Logger))
	}
	o := &Operator{
		cfg: cfg, logger: cfg.Logger, loader: ld, backend: backend, helm: helm,
		modules: map[string]*moduleState{}, schedules: newSchedules(cfg.Now, cfg.After),
		kube: kubeMonitors{hooks: map[string]*hookMonitors{}}, runCtx: context.Background(),
	}
	o.metrics = newMetrics(cfg.Registry, o.revisionInfo)
	return o
}

// revisionInfo is the adopted revision for addon_operator_git_revision_info.
func (o *Operator) revisionInfo() (ref, commit string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.rev.Ref, o.rev.Commit
}

// Run adopts the revision handed over by TreeChanged (or loads the
// configured directories when there is none), reads and validates the
// config values, runs the start-up steps and then reacts to events until
// ctx is done. Invalid configuration or a tree that does not load at
// start-up is an error: the operator stops (docs/operator.md, "Events").
func (o *Operator) Run(ctx context.Context) error {
	o.mu.Lock()
	var rev Revision
	if o.incoming != nil {
		rev, o.incoming = *o.incoming, nil
	}
	o.mu.Unlock()
	model := rev.Model
	if model == nil {
		var err error
		if model, err = o.load(ctx); err != nil {
			return fmt.Errorf("load modules: %w", err)
		}
	}
	store, _, err := values.NewStore(model.Values)
	if err != nil {
		return fmt.Errorf("load values: %w", err)
	}
	data, err := o.backend.Get(ctx)
	if err != nil {
		return err
	}
	if err := checkMaintenance(model, data); err != nil {
		return fmt.Errorf("invalid configuration at start-up: %w", err)
	}
	if _, err := store.SetConfig(data); err != nil {
		return fmt.Errorf("invalid configuration at start-up: %w", err)
	}
	o.mu.Lock()
	o.model, o.store, o.configData, o.rev = model, store, data, Revision{Commit: rev.Commit, Ref: rev.Ref, Dir: rev.Dir}
	for _, m := range model.Modules {
		o.modules[m.Name] = &moduleState{state: StateDisabled}
	}
	o.mu.Unlock()
	o.logger.Info("loaded modules", "modules", len(model.Modules), "global_hooks", len(model.Global.Hooks), "revision", rev.Commit)
	o.runCtx = ctx
	defer o.stopMonitors()

	// schedules accept entries before the first task can ask for them
	o.schedules.start(ctx)
	queues := queue.NewSet(ctx, queue.Options{
		RetryMin: o.cfg.RetryMin, RetryMax: o.cfg.RetryMax, Logger: o.logger, After: o.cfg.After, Now: o.cfg.Now,
		OnLength: func(q string, n int) { o.metrics.queueLength.WithLabelValues(q).Set(float64(n)) },
	})
	o.mu.Lock()
	o.queues = queues
	// a revision reported while the first one was loading
	pending := o.incoming
	o.mu.Unlock()
	main := queues.Main()
	main.Add(o.globalHookTasks(loader.OnStartup)...)
	main.Add(o.reloadAllTask())
	if pending != nil {
		o.TreeChanged(*pending)
	}

	var wg sync.WaitGroup
	wg.Go(func() { o.healLoop(ctx, o.cfg.ResourcesCheckInterval) })
	wg.Go(func() { o.backend.Watch(ctx, o.onConfigChange) })
	<-ctx.Done()
	o.schedules.stop()
	queues.Wait()
	wg.Wait()
	return nil
}

// Ready is true once the first 'reload all modules' finished.
func (o *Operator) Ready() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ready
}

// Queues exposes the task queues; nil until Run has created them.
func (o *Operator) Queues() *queue.Set {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.queues
}

func (o *Operator) current() (*loader.Model, *values.Store) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.model, o.store
}

func (o *Operator) setState(name, state string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	st, ok := o.modules[name]
	if !ok {
		st = &moduleState{}
		o.modules[name] = st
	}
	st.state = state
	st.lastError = ""
	if err != nil && !errors.Is(err, context.Canceled) {
		st.lastError = err.Error()
	}
}

// onConfigChange: ConfigMap events (docs/lifecycle.md, step 16). Bad values
// are logged and nothing is queued; the current state stays. Data older
// than what the store holds (a hook's write whose echo comes late) is
// ignored. The runs it queues pre-empt a failing task.
func (o *Operator) onConfigChange(data map[string]string, version string) {
	o.mu.Lock()
	before, model := o.configData, o.model
	o.mu.Unlock()
	ch, ok, err := o.setConfig(data, version)
	if err != nil {
		o.metrics.configErrors.Inc()
		o.logger.Error("ConfigMap change refused; keeping the current values", "err", err)
		return
	}
	if !ok {
		return
	}
	// a module's maintenance mode is not values: its run applies it
	if model != nil {
		for _, name := range maintenanceChanged(model, before, data) {
			ch.Modules = append(ch.Modules, model.Module(name).Key)
		}
	}
	if ch.Empty() {
		return
	}
	main := o.queues.Main()
	if ch.Global || ch.Enabled {
		o.logger.Info("global values or enabled flags changed; reloading all modules")
		main.Preempt(o.reloadAllTask(), supersededByReload)
		return
	}
	for _, key := range ch.Modules {
		name := values.ModuleName(key)
		o.mu.Lock()
		st := o.modules[name]
		enabled := st != nil && st.enabled
		startup := enabled && !st.startupDone
		o.mu.Unlock()
		if enabled {
			o.logger.Info("module values changed; running module", "module", name)
			main.Preempt(o.moduleRunTask(name, startup), func(t *queue.Task) bool {
				return t.Kind == kindModuleRun && t.Payload == name
			})
		}
	}
}

// setConfig adopts ConfigMap data into the current store unless it is
// older than the data the store holds; ok is false when it was skipped.
func (o *Operator) setConfig(data map[string]string, version string) (values.Change, bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.store == nil || !newerVersion(version, o.configVersion) {
		return values.Change{}, false, nil
	}
	if err := checkMaintenance(o.model, data); err != nil {
		return values.Change{}, false, err
	}
	ch, err := o.store.SetConfig(data)
	if err != nil {
		return ch, false, err
	}
	o.configData, o.configVersion = data, version
	o.logDropped("the ConfigMap changed", ch.Dropped)
	return ch, true, nil
}

// newerVersion compares resourceVersions. They are opaque to clients, but
// etcd's are increasing integers; anything else counts as newer, and so
// does data without a version (a deleted ConfigMap).
func newerVersion(v, than string) bool {
	if v == "" || than == "" {
		return true
	}
	a, errA := strconv.ParseUint(v, 10, 64)
	b, errB := strconv.ParseUint(than, 10, 64)
	if errA != nil || errB != nil {
		return v != than
	}
	return a > b
}

// supersededByReload: the work a 'reload all modules' replaces when it
// pre-empts: an earlier reload's steps and module runs still waiting. Module
// deletes and purges stay; discovery would not queue them again.
func supersededByReload(t *queue.Task) bool {
	switch t.Kind {
	case kindReloadAll, kindReloadChanged, kindDiscover, kindModuleRun, kindParallelRun, kindConverged:
		return true
	case kindGlobalHook:
		return t.Payload == loader.BeforeAll || t.Payload == loader.AfterAll
	}
	return false
}

// queueReloadAll queues 'reload all modules' at the tail unless one waits.
func (o *Operator) queueReloadAll() {
	if !o.queues.Main().HasQueued(kindReloadAll) {
		o.queues.Main().Add(o.reloadAllTask())
	}
}

// logDropped logs temporary values patch operations that no longer apply
// (their path is gone) and were dropped rather than wedge their module.
func (o *Operator) logDropped(why string, dropped []values.DroppedOp) {
	for _, d := range dropped {
		o.logger.Warn("temporary values patch operation dropped: "+why, "section", d.Section, "hook", d.Hook, "op", d.Op, "path", d.Path, "reason", d.Reason)
	}
}
