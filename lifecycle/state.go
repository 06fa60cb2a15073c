package lifecycle

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
	"github.com/addonops/addon-operator/values"
)

// core is what every part of the operator shares: its configuration,
// logger and metrics, and the running state.
type core struct {
	cfg     Config
	logger  *slog.Logger
	metrics *metrics
	*state
}

func newCore(cfg Config) *core {
	c := &core{cfg: cfg, logger: cfg.Logger, state: &state{modules: map[string]*moduleState{}}}
	c.metrics = newMetrics(cfg.Registry, c.revisionInfo)
	return c
}

// state is what the operator runs on, under one lock: the tree (the model,
// the values store built from it, the revision it came from and the
// ConfigMap data the store holds), which adopt replaces as one, and what
// the steps learned about each module. Config changes and values patches
// reach the store under the lock too (docs/operator.md, "One state
// transition at a time").
type state struct {
	mu             sync.Mutex
	queues         *queue.Set // nil until Run made them
	model          *loader.Model
	store          *values.Store
	rev            gitsync.Revision        // the revision the model was loaded from
	prevCommit     string                  // the revision adopted before it
	incoming       *gitsync.Revision       // the newest revision not yet adopted
	modules        map[string]*moduleState // by module name
	enabledModules []string
	ready          bool
	reloadStart    time.Time
	globalChanged  bool                   // an afterAll hook changed global values in this reload
	configData     map[string]string      // the ConfigMap data the store holds
	configVersion  string                 // its resourceVersion
	treeError      string                 // why the last changed tree was refused
	purgeConfirmed string                 // the commit allowed past the purge guard
	purgeRefused   *gitsync.Revision      // the revision the purge guard refused
	purgeError     string                 // why the last discovery purged nothing
	purgeToken     string                 // what confirms the uninstalls it refused
	purgeWarned    string                 // the refusal last recorded as an Event
	hookFailures   map[string]hookFailure // by hook name, for /debug/hooks
}

// ModuleState is where a module is in the lifecycle, as /status shows it.
type ModuleState string

// Module states.
const (
	StateDisabled ModuleState = "Disabled"
	StatePending  ModuleState = "Pending"
	StateRunning  ModuleState = "Running"
	StateReady    ModuleState = "Ready"
	StateFailed   ModuleState = "Failed"
)

type moduleState struct {
	enabled     bool // enabled by the last discovery
	startupDone bool // onStartup hooks ran since it was enabled
	state       ModuleState
	lastError   string // one line (hookError), for /status
	lastOutput  string // the failed hook's output, for /debug only
	conflict    string // the release conflict last reported
	crdsHash    string // the module's hash when its CRDs were last applied
	// scriptFailed: its enabled script failed in the last discovery, which
	// left the module as it was
	scriptFailed bool
}

// revisionInfo is the adopted revision for addon_operator_git_revision_info.
func (c *core) revisionInfo() (ref, commit string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rev.Ref, c.rev.Commit
}

func (c *core) current() (*loader.Model, *values.Store) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.model, c.store
}

func (c *core) setState(name string, state ModuleState, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.modules[name]
	if !ok {
		st = &moduleState{}
		c.modules[name] = st
	}
	st.state = state
	st.lastError, st.lastOutput = "", ""
	if err != nil && !errors.Is(err, context.Canceled) {
		st.lastError, st.lastOutput = err.Error(), hookOutput(err)
	}
}

// setConfig adopts ConfigMap data into the current store unless it is
// older than the data the store holds; ok is false when it was skipped.
func (c *core) setConfig(data map[string]string, version string) (values.Change, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.store == nil || !newerVersion(version, c.configVersion) {
		return values.Change{}, false, nil
	}
	if err := checkMaintenance(c.model, data); err != nil {
		return values.Change{}, false, err
	}
	ch, err := c.store.SetConfig(data)
	if err != nil {
		return ch, false, err
	}
	c.configData, c.configVersion = data, version
	c.logDropped("the ConfigMap changed", ch.Dropped)
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

// logDropped logs temporary values patch operations that no longer apply
// (their path is gone) and were dropped rather than wedge their module.
func (c *core) logDropped(why string, dropped []values.DroppedOp) {
	for _, d := range dropped {
		c.logger.Warn("temporary values patch operation dropped: "+why, "section", d.Section, "hook", d.Hook, "op", d.Op, "path", d.Path, "reason", d.Reason)
	}
}

// queueSet is the task queues; nil until Run has created them.
func (c *core) queueSet() *queue.Set {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queues
}

// converged: the first 'reload all modules' finished.
func (c *core) converged() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready
}
