package taskkind

import (
	"slices"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// The task kinds, as /queue shows them. The names of the constants are
// those the kinds had in lifecycle (kindReloadAll is ReloadAll, and so on).
const (
	// the steps of 'reload all modules' (docs/lifecycle.md, steps 2–8)
	GlobalHook   queue.Kind = "GlobalHookRun"
	ReloadAll    queue.Kind = "ReloadAllModules"
	Discover     queue.Kind = "DiscoverModules"
	ModuleRun    queue.Kind = "ModuleRun"
	ParallelRun  queue.Kind = "ParallelModuleRun"
	HealthWait   queue.Kind = "HealthWait"
	ModuleDelete queue.Kind = "ModuleDelete"
	ModulePurge  queue.Kind = "ModulePurge"
	Converged    queue.Kind = "ConvergeDone"
	EnabledRetry queue.Kind = "EnabledScriptRetry"
	// a new revision (docs/lifecycle.md, "A new revision")
	ReloadTree      queue.Kind = "ReloadTree"
	ReloadChanged   queue.Kind = "ReloadChangedModules"
	RevisionApplied queue.Kind = "RevisionApplied"
	// bindings and drift
	KubeSync     queue.Kind = "KubernetesSynchronization"
	KubeEvent    queue.Kind = "KubernetesEvent"
	ScheduleHook queue.Kind = "ScheduleHookRun"
	DriftCorrect queue.Kind = "DriftCorrect"
)

// Shape is which fields of a queue.Key name a task of a kind.
type Shape string

// Key shapes.
const (
	// KindOnly: one task of the kind stands for the whole tree.
	KindOnly Shape = "kind"
	// PerModule: Key.Module names the module.
	PerModule Shape = "module"
	// PerHook: Key.Hook and Key.Binding name the hook and its binding;
	// Key.Module its module ("" for a global hook).
	PerHook Shape = "hook+binding"
)

// Entry is one row of the table.
type Entry struct {
	Kind queue.Kind
	Key  Shape
	// SupersededBy are the kinds whose pre-emption (queue.Preempt) drops
	// a waiting task of this kind: the newer work replaces it. ReloadAll
	// among them means a 'reload all modules' replaces it.
	SupersededBy []queue.Kind
	// Bindings, when set, narrow SupersededBy to the tasks of these
	// bindings (a reload replaces beforeAll and afterAll hook runs, which
	// it queues again, not onStartup ones).
	Bindings []string
	// What is the step, in a few words.
	What string
}

// Reload: a 'reload all modules' that pre-empts replaces a waiting task
// of this kind (for every binding, or those of Bindings).
func (e Entry) Reload() bool { return slices.Contains(e.SupersededBy, ReloadAll) }

// table is the table: one row per kind, in the order of the lifecycle.
var table = []Entry{
	{Kind: GlobalHook, Key: PerHook, SupersededBy: []queue.Kind{ReloadAll}, Bindings: []string{loader.BeforeAll, loader.AfterAll},
		What: "a global hook's onStartup, beforeAll or afterAll run"},
	{Kind: ReloadAll, Key: KindOnly, SupersededBy: []queue.Kind{ReloadAll},
		What: "'reload all modules': queues beforeAll hooks and discovery"},
	{Kind: Discover, Key: KindOnly, SupersededBy: []queue.Kind{ReloadAll},
		What: "'discover modules': queues the module runs, deletes, purges, afterAll and the end"},
	{Kind: ModuleRun, Key: PerModule, SupersededBy: []queue.Kind{ReloadAll, ReloadChanged, ModuleRun},
		What: "'module run': CRDs, hooks and the Helm release of one module"},
	{Kind: ParallelRun, Key: KindOnly, SupersededBy: []queue.Kind{ReloadAll},
		What: "the module runs of one weight at once (its members are ModuleRun keys)"},
	{Kind: HealthWait, Key: PerModule, SupersededBy: []queue.Kind{ReloadAll},
		What: "later weights wait for a module to be Healthy"},
	{Kind: ModuleDelete, Key: PerModule,
		What: "'module delete': the release of a disabled module"},
	{Kind: ModulePurge, Key: PerModule,
		What: "'module purge': the release of a module whose directory is gone"},
	{Kind: Converged, Key: KindOnly, SupersededBy: []queue.Kind{ReloadAll},
		What: "the end of a reload: ready, the revision's outcome"},
	{Kind: EnabledRetry, Key: KindOnly, SupersededBy: []queue.Kind{ReloadAll},
		What: "enabled scripts that failed, again with backoff"},
	{Kind: ReloadTree, Key: KindOnly, SupersededBy: []queue.Kind{ReloadTree},
		What: "load and adopt a new revision's tree"},
	{Kind: ReloadChanged, Key: KindOnly, SupersededBy: []queue.Kind{ReloadAll},
		What: "run the modules a new tree changed"},
	{Kind: RevisionApplied, Key: KindOnly,
		What: "report a revision that purged modules and ran none"},
	{Kind: KubeSync, Key: PerHook,
		What: "kubernetes Synchronization of a hook's binding (KindOnly: the global hooks')"},
	{Kind: KubeEvent, Key: PerHook,
		What: "a hook's run for kubernetes events"},
	{Kind: ScheduleHook, Key: PerHook,
		What: "a hook's run for a schedule"},
	{Kind: DriftCorrect, Key: PerModule, SupersededBy: []queue.Kind{ReloadAll},
		What: "put a module's drifted objects back"},
}

// byKind indexes table.
var byKind = func() map[queue.Kind]Entry {
	m := make(map[queue.Kind]Entry, len(table))
	for _, e := range table {
		m[e.Kind] = e
	}
	return m
}()

// All is the table, in the order of the lifecycle.
func All() []Entry { return slices.Clone(table) }

// Of is kind's row (false for a kind not in the table).
func Of(kind queue.Kind) (Entry, bool) {
	e, ok := byKind[kind]
	return e, ok
}

// Superseding is what a task of kind by passes to queue.Preempt: the
// waiting work it replaces, by the table. Modules, when given, narrow it
// to the work of those modules (a ConfigMap edit runs one module again; a
// new tree runs the modules it changed).
func Superseding(by queue.Kind, modules ...string) func(queue.Key) bool {
	return func(k queue.Key) bool {
		e, ok := byKind[k.Kind]
		if !ok || !slices.Contains(e.SupersededBy, by) {
			return false
		}
		if len(e.Bindings) > 0 && !slices.Contains(e.Bindings, k.Binding) {
			return false
		}
		return len(modules) == 0 || slices.Contains(modules, k.Module)
	}
}

// SupersededByReload is the work a 'reload all modules' replaces when it
// pre-empts: an earlier reload's steps and module runs still waiting.
// Module deletes and purges stay; discovery would not queue them again.
func SupersededByReload(k queue.Key) bool { return Superseding(ReloadAll)(k) }
