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

// runningTree is the running tree: the model, the values store built from it,
// the revision it came from and the ConfigMap data the store holds. A
// tree is never changed: a transition replaces it whole. Its store is
// the one mutable part: the hooks' values patches and a ConfigMap edit
// change its values, under the holder's lock.
type runningTree struct {
	model         *loader.Model
	store         *values.Store
	rev           gitsync.Revision // without its model
	prevCommit    string           // the revision adopted before it
	configData    map[string]string
	configVersion string // the ConfigMap's resourceVersion
}

// treeHolder holds the running tree. Readers load it without waiting;
// transitions (adopt, a ConfigMap edit, a values patch) run one at a time
// under mu, so a ConfigMap change or a values patch cannot land in the old
// store after adopt copied it (docs/operator.md, "One state transition at
// a time").
type treeHolder struct {
	mu sync.Mutex
	p  atomic.Pointer[runningTree]
}

// load is the running tree (nil before Run adopted the first).
func (h *treeHolder) load() *runningTree { return h.p.Load() }

// current is the running model and store (nil before Run).
func (h *treeHolder) current() (*loader.Model, *values.Store) {
	if t := h.load(); t != nil {
		return t.model, t.store
	}
	return nil, nil
}

// revisionInfo is the adopted revision for addon_operator_git_revision_info.
func (h *treeHolder) revisionInfo() (ref, commit string) {
	if t := h.load(); t != nil {
		return t.rev.Ref, t.rev.Commit
	}
	return "", ""
}

// transition runs fn on the running tree under the lock; the tree it
// returns (nil: none) replaces the running one unless fn fails.
func (h *treeHolder) transition(fn func(cur *runningTree) (*runningTree, error)) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	next, err := fn(h.load())
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
// (settingscheck.go): another running model is errTreeMoved.
func (h *treeHolder) setConfig(data map[string]string, version string, checked *loader.Model) (ch values.Change, ok bool, err error) {
	err = h.transition(func(cur *runningTree) (*runningTree, error) {
		if cur == nil || !newerVersion(version, cur.configVersion) {
			return nil, nil
		}
		if checked != nil && cur.model != checked {
			return nil, errTreeMoved
		}
		if _, err := admit(cur.model, data, cur.store.Sections().Active()); err != nil {
			return nil, err
		}
		if ch, err = cur.store.SetConfig(data); err != nil {
			return nil, err
		}
		next := *cur
		next.configData, next.configVersion = data, version
		ok = true
		return &next, nil
	})
	return ch, ok, err
}

// applyValuesPatch applies a hook's values patch to the store running now:
// a tree adopted while the hook ran keeps the patch.
func (h *treeHolder) applyValuesPatch(hook, moduleKey string, p values.Patch) (pr values.PatchResult, err error) {
	err = h.transition(func(cur *runningTree) (*runningTree, error) {
		pr, err = cur.store.ApplyValuesPatch(hook, moduleKey, p)
		return nil, err
	})
	return pr, err
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
	reason      string // the reason of a terminal error (queue.TerminalError)
	lastOutput  string // the failed hook's output, for /debug only
	conflict    string // the release conflict last reported
	crdsHash    string // the module's hash when its CRDs were last applied
	// scriptFailed: its enabled script failed in the last discovery, which
	// left the module as it was
	scriptFailed bool
	// configRefused: the last discovery would have enabled it, but its
	// ConfigMap section does not match its config schema, so it was left
	// as it was; a change to that section reloads all modules
	configRefused bool
	// disabledReason is what its enabled script gave for answering false
	// (MODULE_ENABLED_REASON), for /status
	disabledReason string
	// readiness is its readiness hook's last result (readiness.go)
	readiness *Readiness
}

// moduleRegistry is what the steps learned about each module, and the
// modules the last discovery enabled, in run order.
type moduleRegistry struct {
	mu      sync.Mutex
	modules map[string]*moduleState // by module name
	enabled []string
	// discovered: a discovery resolved the enabled states (the webhooks of
	// a module are answered by its hook only from then on, webhooks.go)
	discovered bool
}

func newModuleRegistry() *moduleRegistry {
	return &moduleRegistry{modules: map[string]*moduleState{}}
}

// get is a copy of a module's state (the zero value for an unknown one).
func (r *moduleRegistry) get(name string) moduleState {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.modules[name]; st != nil {
		return *st
	}
	return moduleState{}
}

// isEnabled: the last discovery enabled the module.
func (r *moduleRegistry) isEnabled(name string) bool { return r.get(name).enabled }

// all is a copy of every module's state.
func (r *moduleRegistry) all() map[string]moduleState {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]moduleState, len(r.modules))
	for name, st := range r.modules {
		out[name] = *st
	}
	return out
}

// enabledList is the modules the last discovery enabled, in run order.
func (r *moduleRegistry) enabledList() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.enabled)
}

// inEnabledList: the module is in enabledList, read without a copy.
func (r *moduleRegistry) inEnabledList(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.enabled, name)
}

// markDiscovered records that a discovery resolved the enabled states.
func (r *moduleRegistry) markDiscovered() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.discovered = true
}

// wasDiscovered: a discovery resolved the enabled states since start-up.
func (r *moduleRegistry) wasDiscovered() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.discovered
}

// update changes a known module's state (nothing for an unknown one).
func (r *moduleRegistry) update(name string, fn func(st *moduleState)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.modules[name]; st != nil {
		fn(st)
	}
}

// edit runs fn on every module's state and the enabled list as one step
// (discovery, a changed tree): fn may add and delete entries.
func (r *moduleRegistry) edit(fn func(modules map[string]*moduleState, enabled *[]string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(r.modules, &r.enabled)
}

// reset starts over with every module of a tree Disabled (start-up).
func (r *moduleRegistry) reset(model *loader.Model) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.modules = map[string]*moduleState{}
	for _, m := range model.Modules {
		r.modules[m.Name] = &moduleState{state: StateDisabled}
	}
}

// setState records where a module is, and the error that put it there.
func (r *moduleRegistry) setState(name string, state ModuleState, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.modules[name]
	if !ok {
		st = &moduleState{}
		r.modules[name] = st
	}
	st.state = state
	st.lastError, st.lastOutput, st.reason = "", "", ""
	if err != nil && !errors.Is(err, context.Canceled) {
		st.lastError, st.lastOutput = err.Error(), hookOutput(err)
		if queue.IsTerminal(err) {
			st.reason = queue.Reason(err)
		}
	}
}

// queueRef is the task queues, which Run creates (nil before).
type queueRef struct{ p atomic.Pointer[queue.Set] }

func (q *queueRef) get() *queue.Set { return q.p.Load() }

// main is the "main" queue; only called once Run created the queues.
func (q *queueRef) main() *queue.Queue { return q.get().Main() }
