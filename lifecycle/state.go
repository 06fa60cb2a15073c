package lifecycle

import (
	"context"
	"errors"
	"github.com/addonops/addon-operator/gitsync"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
	"github.com/addonops/addon-operator/values"
)

// The running state is three small holders, each with its own lock, that
// the parts of the operator get as fields (docs/architecture.md, "The
// running state"): the tree (treeHolder), what the steps learned about
// each module (moduleRegistry) and the task queues (queueRef). The steps'
// own bookkeeping (a reload's start, the revisions on the way, the purge
// guard's verdicts) lives in the steps (steps.go, revision.go, purge.go),
// and the hook runner's failures in the runner (failure.go).

// Tree is the running tree: the model, the values store built from it,
// the revision it came from and the ConfigMap data the store holds. A
// tree is never changed: a transition replaces it whole. Its store is
// the one mutable part: the hooks' values patches and a ConfigMap edit
// change its values, under the holder's lock.
type Tree struct {
	Model         *loader.Model
	Store         *values.Store
	Rev           gitsync.Revision // without its Checked model
	PrevCommit    string           // the revision adopted before it
	ConfigData    map[string]string
	ConfigVersion string // the ConfigMap's resourceVersion
}

// Trees holds the running tree. Readers load it without waiting;
// transitions (adopt, a ConfigMap edit, a values patch) run one at a time
// under mu, so a ConfigMap change or a values patch cannot land in the old
// store after adopt copied it (docs/operator.md, "One state transition at
// a time").
type Trees struct {
	mu sync.Mutex
	p  atomic.Pointer[Tree]
}

// Load is the running tree (nil before Run adopted the first).
func (h *Trees) Load() *Tree { return h.p.Load() }

// Current is the running model and store (nil before Run).
func (h *Trees) Current() (*loader.Model, *values.Store) {
	if t := h.Load(); t != nil {
		return t.Model, t.Store
	}
	return nil, nil
}

// revisionInfo is the adopted revision for addon_operator_git_revision_info.
func (h *Trees) RevisionInfo() (ref, commit string) {
	if t := h.Load(); t != nil {
		return t.Rev.Ref, t.Rev.Commit
	}
	return "", ""
}

// Transition runs fn on the running tree under the lock; the tree it
// returns (nil: none) replaces the running one unless fn fails.
func (h *Trees) Transition(fn func(cur *Tree) (*Tree, error)) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	next, err := fn(h.Load())
	if err == nil && next != nil {
		h.p.Store(next)
	}
	return err
}

// setConfig adopts ConfigMap data into the running store unless it is
// older than the data the store holds; ok is false when it was skipped.
// The data is admitted (admit) first; the running store, which keeps the
// hooks' values patches, then takes it and says what changed. checked,
// when not nil, is the model the data's settings checks ran against
// (settingscheck.go): another running model is ErrTreeMoved.
func (h *Trees) SetConfig(data map[string]string, version string, checked *loader.Model) (ch values.Change, ok bool, err error) {
	err = h.Transition(func(cur *Tree) (*Tree, error) {
		if cur == nil || !NewerVersion(version, cur.ConfigVersion) {
			return nil, nil
		}
		if checked != nil && cur.Model != checked {
			return nil, ErrTreeMoved
		}
		if _, err := Admit(cur.Model, data, cur.Store.Sections().Active()); err != nil {
			return nil, err
		}
		if ch, err = cur.Store.SetConfig(data); err != nil {
			return nil, err
		}
		next := *cur
		next.ConfigData, next.ConfigVersion = data, version
		ok = true
		return &next, nil
	})
	return ch, ok, err
}

// applyValuesPatch applies a hook's values patch to the store running now:
// a tree adopted while the hook ran keeps the patch.
func (h *Trees) ApplyValuesPatch(hook, moduleKey string, p values.Patch) (pr values.PatchResult, err error) {
	err = h.Transition(func(cur *Tree) (*Tree, error) {
		pr, err = cur.Store.ApplyValuesPatch(hook, moduleKey, p)
		return nil, err
	})
	return pr, err
}

// NewerVersion compares resourceVersions. They are opaque to clients, but
// etcd's are increasing integers; anything else counts as newer, and so
// does data without a version (a deleted ConfigMap).
func NewerVersion(v, than string) bool {
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

type Module struct {
	Enabled     bool // enabled by the last discovery
	StartupDone bool // onStartup hooks ran since it was enabled
	State       ModuleState
	LastError   string // one line (hookError), for /status
	Reason      string // the reason of a terminal error (queue.TerminalError)
	LastOutput  string // the failed hook's output, for /debug only
	Conflict    string // the release conflict last reported
	CrdsHash    string // the module's hash when its CRDs were last applied
	// ScriptFailed: its enabled script failed in the last discovery, which
	// left the module as it was
	ScriptFailed bool
	// ConfigRefused: the last discovery would have enabled it, but its
	// ConfigMap section does not match its config schema, so it was left
	// as it was; a change to that section reloads all modules
	ConfigRefused bool
	// disabledReason is what its enabled script gave for answering false
	// (MODULE_ENABLED_REASON), for /status
	DisabledReason string
	// Readiness is its Readiness hook's last result (Readiness.go)
	Readiness *Readiness
}

// Modules is what the steps learned about each module, and the
// modules the last discovery enabled, in run order.
type Modules struct {
	mu      sync.Mutex
	modules map[string]*Module // by module name
	enabled []string
	// discovered: a discovery resolved the enabled states (the webhooks of
	// a module are answered by its hook only from then on, webhooks.go)
	discovered bool
}

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

// enabledList is the modules the last discovery enabled, in run order.
func (r *Modules) EnabledList() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.enabled)
}

// InEnabledList: the module is in enabledList, read without a copy.
func (r *Modules) InEnabledList(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.enabled, name)
}

// markDiscovered records that a discovery resolved the enabled states.
func (r *Modules) MarkDiscovered() {
	r.mu.Lock()
	defer r.mu.Unlock()
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
	if st := r.modules[name]; st != nil {
		fn(st)
	}
}

// Edit runs fn on every module's state and the enabled list as one step
// (discovery, a changed tree): fn may add and delete entries.
func (r *Modules) Edit(fn func(modules map[string]*Module, enabled *[]string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(r.modules, &r.enabled)
}

// Reset starts over with every module of a tree Disabled (start-up).
func (r *Modules) Reset(model *loader.Model) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.modules = map[string]*Module{}
	for _, m := range model.Modules {
		r.modules[m.Name] = &Module{State: StateDisabled}
	}
}

// setState records where a module is, and the error that put it there.
func (r *Modules) SetState(name string, state ModuleState, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.modules[name]
	if !ok {
		st = &Module{}
		r.modules[name] = st
	}
	st.State = state
	st.LastError, st.LastOutput, st.Reason = "", "", ""
	if err != nil && !errors.Is(err, context.Canceled) {
		st.LastError, st.LastOutput = err.Error(), hookOutput(err)
		if queue.IsTerminal(err) {
			st.Reason = queue.Reason(err)
		}
	}
}

// Queues is the task queues, which Run creates (nil before).
type Queues struct{ p atomic.Pointer[queue.Set] }

func (q *Queues) Get() *queue.Set { return q.p.Load() }

// Main is the "Main" queue; only called once Run created the queues.
func (q *Queues) Main() *queue.Queue { return q.Get().Main() }
