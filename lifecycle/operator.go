package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
	"github.com/addonops/addon-operator/values"
)

// ConfigBackend is where config values live (ConfigMap/addon-operator).
type ConfigBackend interface {
	Get(ctx context.Context) (map[string]string, error)
	Update(ctx context.Context, fn func(map[string]string) (map[string]string, error)) (map[string]string, error)
	Watch(ctx context.Context, onChange func(map[string]string))
}

// Helm installs and removes module releases.
type Helm interface {
	Upgrade(ctx context.Context, r kube.Release) (kube.Result, error)
	Uninstall(ctx context.Context, name string) (bool, error)
	Releases() ([]string, error)
	// AbsentResources lists the missing resources of a module's release.
	AbsentResources(name string) ([]string, error)
}

var (
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
	// Commit is the git commit of the tree at start-up, recorded on
	// releases; TreeChanged brings later ones.
	Commit string
	// ResourcesCheckInterval is the period of the absent-resources check
	// (auto-healing); zero turns it off.
	ResourcesCheckInterval time.Duration
	// Watcher starts the monitors of kubernetes bindings (nil: a hook
	// with kubernetes bindings fails with errNoWatcher).
	Watcher Watcher
	// After is the queues' clock (tests make retries instant).
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

	mu             sync.Mutex
	model          *loader.Model
	store          *values.Store
	modules        map[string]*moduleState // by module name
	enabledModules []string
	ready          bool
	reloadStart    time.Time
	globalChanged  bool              // an afterAll hook changed global values in this reload
	configData     map[string]string // the ConfigMap data the store holds
	commit         string            // the revision the model was loaded from
	treeError      string            // why the last changed tree was refused
	pendingTree    bool              // TreeChanged came before the queues existed
	pendingCommit  string
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
	if cfg.TempDir == "" {
		cfg.TempDir = os.TempDir()
	}
	if ld == nil {
		ld = loader.New(loader.WithLogger(cfg.Logger))
	}
	return &Operator{
		cfg: cfg, logger: cfg.Logger, loader: ld, backend: backend, helm: helm,
		metrics: newMetrics(cfg.Registry), modules: map[string]*moduleState{}, schedules: newSchedules(),
		kube: kubeMonitors{hooks: map[string]*hookMonitors{}}, runCtx: context.Background(),
	}
}

// Run loads the tree, reads and validates the config values, runs the
// start-up steps and then reacts to events until ctx is done. Invalid
// configuration or a tree that does not load at start-up is an error: the
// operator stops (VALUES.md "Validation").
func (o *Operator) Run(ctx context.Context) error {
	// A tree change that came before Run (a standby following its ref) is
	// in the tree loaded below, so the model carries that revision.
	o.mu.Lock()
	commit := o.cfg.Commit
	if o.pendingTree {
		commit, o.pendingTree = o.pendingCommit, false
	}
	o.mu.Unlock()
	model, err := o.load(ctx)
	if err != nil {
		return fmt.Errorf("load modules: %w", err)
	}
	store, _, err := values.NewStore(model.Values)
	if err != nil {
		return fmt.Errorf("load values: %w", err)
	}
	data, err := o.backend.Get(ctx)
	if err != nil {
		return err
	}
	if _, err := store.SetConfig(data); err != nil {
		return fmt.Errorf("invalid configuration at start-up: %w", err)
	}
	o.mu.Lock()
	o.model, o.store, o.configData, o.commit = model, store, data, commit
	for _, m := range model.Modules {
		o.modules[m.Name] = &moduleState{state: StateDisabled}
	}
	o.mu.Unlock()
	o.logger.Info("loaded modules", "modules", len(model.Modules), "global_hooks", len(model.Global.Hooks))
	o.runCtx = ctx
	defer o.stopMonitors()

	queues := queue.NewSet(ctx, queue.Options{
		RetryMin: o.cfg.RetryMin, RetryMax: o.cfg.RetryMax, Logger: o.logger, After: o.cfg.After, Now: o.cfg.Now,
		OnLength: func(q string, n int) { o.metrics.queueLength.WithLabelValues(q).Set(float64(n)) },
	})
	o.mu.Lock()
	o.queues = queues
	pending, pendingCommit := o.pendingTree, o.pendingCommit
	o.mu.Unlock()
	main := o.queues.Main()
	main.Add(o.globalHookTasks(loader.OnStartup)...)
	main.Add(o.reloadAllTask())
	if pending {
		o.TreeChanged(pendingCommit)
	}

	go o.healLoop(ctx, o.cfg.ResourcesCheckInterval)
	o.schedules.cron.Start()
	defer func() { <-o.schedules.cron.Stop().Done() }()

	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		o.backend.Watch(ctx, o.onConfigChange)
	}()
	<-ctx.Done()
	o.queues.Wait()
	<-watchDone
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

// onConfigChange: ConfigMap events (LIFECYCLE-STEPS step 16). Bad values
// are logged and nothing is queued; the current state stays.
func (o *Operator) onConfigChange(data map[string]string) {
	_, store := o.current()
	if store == nil {
		return
	}
	ch, err := store.SetConfig(data)
	if err != nil {
		o.metrics.configErrors.Inc()
		o.logger.Error("ConfigMap change refused; keeping the current values", "err", err)
		return
	}
	o.mu.Lock()
	o.configData = data
	o.mu.Unlock()
	if ch.Empty() {
		return
	}
	main := o.queues.Main()
	if ch.Global || ch.Enabled {
		o.logger.Info("global values or enabled flags changed; reloading all modules")
		o.queueReloadAll()
		return
	}
	for _, key := range ch.Modules {
		name := values.ModuleName(key)
		o.mu.Lock()
		st := o.modules[name]
		enabled := st != nil && st.enabled
		o.mu.Unlock()
		if enabled {
			o.logger.Info("module values changed; running module", "module", name)
			main.Add(o.moduleRunTask(name, false))
		}
	}
}

func (o *Operator) queueReloadAll() {
	if !o.queues.Main().HasQueued(kindReloadAll) {
		o.queues.Main().Add(o.reloadAllTask())
	}
}
