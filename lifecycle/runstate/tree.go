package runstate

import (
	"sync"
	"sync/atomic"

	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/values"
)

// Tree is the running tree: the model, the values store built from it,
// the revision it came from and the ConfigMap data the store holds. A
// tree is never changed: a transition replaces it whole. Its store is
// the one mutable part: the hooks' values patches and a ConfigMap edit
// change its values, under the holder's lock.
//
// With the cluster's config in git (Model.Config, docs/operator.md,
// "Config in git"), ClusterData is what the cluster sets (the ConfigMap's
// data), kept to overlay the next tree's config on; ConfigData, what
// everything reads, is the config in git laid over it (Effective), and
// Overrides are the cluster's values git replaced: config drift. Without
// it, ConfigData is ClusterData and there are no overrides.
type Tree struct {
	Model         *loader.Model
	Store         *values.Store
	Rev           gitsync.Revision // without its model
	PrevCommit    string           // the revision adopted before it
	ClusterData   map[string]string
	ConfigData    map[string]string
	Overrides     []clusterconfig.Override
	ConfigVersion string // the ConfigMap's resourceVersion (kube.ClusterValues': its own)
	// Sensitive are the config values' secret paths: the values Secret's
	// and the encrypted ones of the model's cluster config, set by the
	// holder at each transition (docs/operator.md, "Secrets").
	Sensitive values.Sensitive
}

// Effective lays the model's config in git over the cluster's data
// (clusterconfig.Overlay): the data the model is admitted against and the
// config drift. Without a config in git it is the cluster's data.
func Effective(model *loader.Model, cluster map[string]string) (map[string]string, []clusterconfig.Override, error) {
	var git *clusterconfig.Config
	if model != nil {
		git = model.Config
	}
	return clusterconfig.Overlay(cluster, git)
}

// Trees holds the running tree. Readers load it without waiting;
// transitions (adopt, a ConfigMap edit, a values patch) run one at a time
// under mu, so a ConfigMap change or a values patch cannot land in the old
// store after adopt copied it (docs/operator.md, "One state transition at
// a time").
type Trees struct {
	mu     sync.Mutex
	p      atomic.Pointer[Tree]
	notify notifier
	// Redactor is told each tree's secret values (nil: none).
	Redactor *values.Redactor
}

// Start sets the first running tree (Run's start-up, before any task).
func (h *Trees) Start(t *Tree) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sensitive(t)
	h.p.Store(t)
	h.notify.bump()
}

// sensitive sets t's secret paths (those the Redactor knows: the values
// Secret's, and the model's encrypted ones, of its config in git and of
// its values files) and tells the Redactor their values in t's data and
// the model's values files, before anything can show them.
func (h *Trees) sensitive(t *Tree) {
	s := t.Sensitive.Union(h.Redactor.Sensitive())
	if m := t.Model; m != nil {
		if m.Config != nil {
			s = s.Union(values.SensitiveFromEncrypted(m.Config.Encrypted))
		}
		s = s.Union(values.SensitiveFromEncrypted(m.Encrypted))
		m.Redact(h.Redactor)
	}
	t.Sensitive = s
	h.Redactor.Add(s, t.ConfigData)
}

// Decrypted tells the Redactor the values a model decrypted (its config
// in git's and its values files'), before the model is judged: a
// refusal's message may quote them (CheckTree).
func (h *Trees) Decrypted(m *loader.Model) { m.Redact(h.Redactor) }

// Changed is the version of the running tree and a channel closed when a
// transition replaces it: a new tree (Start, adopt) or new ConfigMap data
// (SetConfig, which keeps the model). A hook's values patch changes the
// store in place and announces nothing.
func (h *Trees) Changed() (uint64, <-chan struct{}) { return h.notify.changed() }

// Load is the running tree (nil before Run adopted the first).
func (h *Trees) Load() *Tree { return h.p.Load() }

// Current is the running model and store (nil before Run).
func (h *Trees) Current() (*loader.Model, *values.Store) {
	if t := h.Load(); t != nil {
		return t.Model, t.Store
	}
	return nil, nil
}

// RevisionInfo is the adopted revision for addon_operator_git_revision_info.
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
		h.sensitive(next)
		h.p.Store(next)
		h.notify.bump()
	}
	return err
}

// SetConfig adopts ConfigMap data (the cluster's side) into the running
// store unless it is older than the data the store holds; ok is false when
// it was skipped. The running model's config in git is laid over it
// (Effective) and the result admitted (Admit) first; the running store,
// which keeps the hooks' values patches, then takes it and says what
// changed: an edit of a key git sets changes only the overrides, not the
// values. checked, when not nil, is the model the data's settings checks
// ran against (lifecycle's settings checks): another running model is
// ErrTreeMoved.
func (h *Trees) SetConfig(data map[string]string, version string, checked *loader.Model) (ch values.Change, ok bool, err error) {
	err = h.Transition(func(cur *Tree) (*Tree, error) {
		if cur == nil || !NewerVersion(version, cur.ConfigVersion) {
			return nil, nil
		}
		if checked != nil && cur.Model != checked {
			return nil, ErrTreeMoved
		}
		eff, overrides, err := Effective(cur.Model, data)
		if err != nil {
			return nil, err
		}
		if _, err := Admit(cur.Model, eff, cur.Store.Sections().Active()); err != nil {
			return nil, err
		}
		if ch, err = cur.Store.SetConfig(eff); err != nil {
			return nil, err
		}
		next := *cur
		next.ClusterData, next.ConfigData, next.Overrides, next.ConfigVersion = data, eff, overrides, version
		ok = true
		return &next, nil
	})
	return ch, ok, err
}

// ApplyValuesPatch applies a hook's values patch to the store running now:
// a tree adopted while the hook ran keeps the patch.
func (h *Trees) ApplyValuesPatch(hook, moduleKey string, p values.Patch) (pr values.PatchResult, err error) {
	err = h.Transition(func(cur *Tree) (*Tree, error) {
		pr, err = cur.Store.ApplyValuesPatch(hook, moduleKey, p)
		return nil, err
	})
	return pr, err
}

// NewerVersion compares the ConfigMap data's versions (kube.NewerVersion):
// a SetConfig with older data is skipped.
func NewerVersion(v, than string) bool { return kube.NewerVersion(v, than) }
