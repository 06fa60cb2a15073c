package runstate

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

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

// Module is what the steps learned about one module.
type Module struct {
	Enabled     bool // enabled by the last discovery
	StartupDone bool // onStartup hooks ran since it was enabled
	State       ModuleState
	LastError   string // one line (a hook error's), for /status
	Reason      string // the reason of a terminal error (queue.TerminalError)
	LastOutput  string // the failed hook's output, for /debug only
	Conflict    string // the release conflict last reported
	CRDsHash    string // the module's hash when its CRDs were last applied
	// ScriptFailed: its enabled script failed in the last discovery, which
	// left the module as it was
	ScriptFailed bool
	// ConfigRefused: the last discovery would have enabled it, but its
	// ConfigMap section does not match its config schema, so it was left
	// as it was; a change to that section reloads all modules
	ConfigRefused bool
	// DisabledReason is what its enabled script gave for answering false
	// (MODULE_ENABLED_REASON), for /status
	DisabledReason string
	// Readiness is its readiness hook's last result
	Readiness *Readiness
}

// Modules is what the steps learned about each module, and the
// modules the last discovery enabled, in run order.
type Modules struct {
	mu      sync.Mutex
	modules map[string]*Module // by module name
	enabled []string
	// discovered: a discovery resolved the enabled states (the webhooks of
	// a module are answered by its hook only from then on: lifecycle/webhookrun)
	discovered bool
	notify     notifier
}

// Changed is the version of the registry and a channel closed at its next
// change (a module's state, the enabled list, a discovery).
func (r *Modules) Changed() (uint64, <-chan struct{}) { return r.notify.changed() }

// NewModules is an empty registry.
func NewModules() *Modules {
	return &Modules{modules: map[string]*Module{}}
}

// Get is a copy of a module's state (the zero value for an unknown one).
func (r *Modules) Get(name string) Module {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.modules[name]; st != nil {
		return *st
	}
	return Module{}
}

// IsEnabled: the last discovery enabled the module.
func (r *Modules) IsEnabled(name string) bool { return r.Get(name).Enabled }

// All is a copy of every module's state.
func (r *Modules) All() map[string]Module {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]Module, len(r.modules))
	for name, st := range r.modules {
		out[name] = *st
	}
	return out
}

// EnabledList is the modules the last discovery enabled, in run order.
// It is shared, not copied (every hook run reads it: a copy each was
// O(N²) garbage per converge), so callers must not change it: the list is
// replaced whole (Edit), never changed in place.
func (r *Modules) EnabledList() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.enabled
}

// InEnabledList: the module is in EnabledList, read without a copy.
func (r *Modules) InEnabledList(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.enabled, name)
}

// MarkDiscovered records that a discovery resolved the enabled states.
func (r *Modules) MarkDiscovered() {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.notify.bump()
	r.discovered = true
}

// WasDiscovered: a discovery resolved the enabled states since start-up.
func (r *Modules) WasDiscovered() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.discovered
}

// Update changes a known module's state (nothing for an unknown one).
func (r *Modules) Update(name string, fn func(st *Module)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.notify.bump()
	if st := r.modules[name]; st != nil {
		fn(st)
	}
}

// Edit runs fn on every module's state and the enabled list as one step
// (discovery, a changed tree): fn may add and delete entries.
func (r *Modules) Edit(fn func(modules map[string]*Module, enabled *[]string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.notify.bump()
	// fn edits a copy: the list readers hold (EnabledList) stays as it was
	list := slices.Clone(r.enabled)
	fn(r.modules, &list)
	r.enabled = slices.Clip(list)
}

// Reset starts over with every module of a tree Disabled (start-up).
func (r *Modules) Reset(model *loader.Model) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.notify.bump()
	r.modules = map[string]*Module{}
	for _, m := range model.Modules {
		r.modules[m.Name] = &Module{State: StateDisabled}
	}
}

// SetState records where a module is, and the error that put it there.
// A run that starts (Running), or one cancelled, keeps the last error: a
// module failing on retry shows its error all along, not only between two
// attempts, until a run ends without one (docs/operator.md, "HTTP"),
// as the original's module error does.
func (r *Modules) SetState(name string, state ModuleState, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.notify.bump()
	st, ok := r.modules[name]
	if !ok {
		st = &Module{}
		r.modules[name] = st
	}
	st.State = state
	st.Reason = ""
	// a run that was cancelled (a newer revision, shutdown) ended without
	// an outcome of its own
	if state == StateRunning && err == nil || errors.Is(err, context.Canceled) {
		return
	}
	st.LastError, st.LastOutput = "", ""
	if err != nil {
		st.LastError, st.LastOutput = err.Error(), outputOf(err)
		if queue.IsTerminal(err) {
			st.Reason = queue.Reason(err)
		}
	}
}

// Output is what a failed hook printed, kept for /debug only (the hook
// runner's errors have it).
type Output interface{ HookOutput() string }

// outputOf is the output an error carries ("" for an error without one).
func outputOf(err error) string {
	var o Output
	if errors.As(err, &o) {
		return o.HookOutput()
	}
	return ""
}

// Readiness is the last result of a module's readiness hook (module-sdk's
// `hook ready`, docs/operator.md "Readiness hooks"), shown on /status and
// by `module list`. It runs on its own schedule from the module's first
// run on, as the original's schedules do; its result changes nothing else.
type Readiness struct {
	Ready bool `json:"ready"`
	// Message is what the hook said failed: the message of module-sdk's
	// error line ({"message": ...} on stderr), one line.
	Message string `json:"message,omitempty"`
	// Error is the run's error, one line ("hook …-readiness (…): exited 1").
	Error   string    `json:"error,omitempty"`
	Checked time.Time `json:"checked"`
}

// SetDisabledReasons records the enabled scripts' reasons of a resolution
// that changed no module's enabled state (a module-scoped reload; a
// discovery records them itself): every known module gets its own, or
// none.
func (r *Modules) SetDisabledReasons(reasons map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.notify.bump()
	for name, st := range r.modules {
		st.DisabledReason = reasons[name]
	}
}

// ShownReasons are the disabled reason and the readiness /status shows: the
// first while the module is disabled, the second while it is enabled.
func (st Module) ShownReasons() (string, *Readiness) {
	if st.Enabled {
		return "", st.Readiness
	}
	return st.DisabledReason, nil
}
