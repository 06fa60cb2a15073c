package taskkind

import (
	"testing"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

func TestTableHasEveryKindOnce(t *testing.T) {
	t.Parallel()
	kinds := []queue.Kind{GlobalHook, ReloadAll, Discover, ModuleRun, ParallelRun, HealthWait, ModuleDelete, ModulePurge,
		Converged, EnabledRetry, ReloadTree, ReloadChanged, RevisionApplied, KubeSync, KubeEvent, ScheduleHook, DriftCorrect}
	if len(All()) != len(kinds) {
		t.Fatalf("the table has %d rows, want one per kind (%d)", len(All()), len(kinds))
	}
	seen := map[queue.Kind]bool{}
	for _, e := range All() {
		if seen[e.Kind] {
			t.Errorf("%s: two rows", e.Kind)
		}
		seen[e.Kind] = true
		if e.Key == "" || e.What == "" {
			t.Errorf("%s: row without a key shape or a description", e.Kind)
		}
		for _, by := range e.SupersededBy {
			if _, ok := Of(by); !ok {
				t.Errorf("%s: superseded by %s, which is not in the table", e.Kind, by)
			}
		}
	}
	for _, k := range kinds {
		if _, ok := Of(k); !ok {
			t.Errorf("%s: no row", k)
		}
	}
}

func TestSuperseding(t *testing.T) {
	t.Parallel()
	run := func(m string) queue.Key { return queue.Key{Kind: ModuleRun, Module: m} }
	hook := func(binding string) queue.Key { return queue.Key{Kind: GlobalHook, Hook: "h", Binding: binding} }
	cases := []struct {
		name    string
		by      queue.Kind
		modules []string
		key     queue.Key
		want    bool
	}{
		// a reload replaces an earlier reload's steps and the module runs
		{"reload replaces a reload", ReloadAll, nil, queue.Key{Kind: ReloadAll}, true},
		{"reload replaces changed modules", ReloadAll, nil, queue.Key{Kind: ReloadChanged}, true},
		{"reload replaces discovery", ReloadAll, nil, queue.Key{Kind: Discover}, true},
		{"reload replaces a module run", ReloadAll, nil, run("a"), true},
		{"reload replaces a weight group", ReloadAll, nil, queue.Key{Kind: ParallelRun}, true},
		{"reload replaces a health wait", ReloadAll, nil, queue.Key{Kind: HealthWait, Module: "a"}, true},
		{"reload replaces the end", ReloadAll, nil, queue.Key{Kind: Converged}, true},
		{"reload replaces a retry of enabled scripts", ReloadAll, nil, queue.Key{Kind: EnabledRetry}, true},
		{"reload replaces a drift correction", ReloadAll, nil, queue.Key{Kind: DriftCorrect, Module: "a"}, true},
		{"reload replaces beforeAll", ReloadAll, nil, hook(loader.BeforeAll), true},
		{"reload replaces afterAll", ReloadAll, nil, hook(loader.AfterAll), true},
		// and keeps the rest
		{"reload keeps onStartup", ReloadAll, nil, hook(loader.OnStartup), false},
		{"reload keeps a delete", ReloadAll, nil, queue.Key{Kind: ModuleDelete, Module: "a"}, false},
		{"reload keeps a purge", ReloadAll, nil, queue.Key{Kind: ModulePurge, Module: "a"}, false},
		{"reload keeps a tree's load", ReloadAll, nil, queue.Key{Kind: ReloadTree}, false},
		{"reload keeps a revision's report", ReloadAll, nil, queue.Key{Kind: RevisionApplied}, false},
		{"reload keeps event runs", ReloadAll, nil, queue.Key{Kind: KubeEvent, Hook: "h", Binding: "b"}, false},
		{"reload keeps schedules", ReloadAll, nil, queue.Key{Kind: ScheduleHook, Hook: "h", Binding: "b"}, false},
		{"reload keeps Synchronization", ReloadAll, nil, queue.Key{Kind: KubeSync}, false},
		{"an unknown kind stays", ReloadAll, nil, queue.Key{Kind: "Other"}, false},
		// a newer tree replaces an older one's load
		{"tree replaces tree", ReloadTree, nil, queue.Key{Kind: ReloadTree}, true},
		{"tree keeps a reload", ReloadTree, nil, queue.Key{Kind: ReloadAll}, false},
		// a ConfigMap edit's run replaces that module's run alone
		{"module run replaces its own", ModuleRun, []string{"a"}, run("a"), true},
		{"module run keeps another's", ModuleRun, []string{"a"}, run("b"), false},
		{"module run keeps the health wait", ModuleRun, []string{"a"}, queue.Key{Kind: HealthWait, Module: "a"}, false},
		// a new tree's changed modules replace their runs
		{"changed modules replace theirs", ReloadChanged, []string{"a", "b"}, run("b"), true},
		{"changed modules keep others", ReloadChanged, []string{"a", "b"}, run("c"), false},
		{"changed modules keep a reload", ReloadChanged, nil, queue.Key{Kind: ReloadAll}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := Superseding(c.by, c.modules...)(c.key); got != c.want {
				t.Errorf("Superseding(%s, %v)(%+v) = %v, want %v", c.by, c.modules, c.key, got, c.want)
			}
		})
	}
	if !SupersededByReload(run("a")) || SupersededByReload(queue.Key{Kind: ModuleDelete, Module: "a"}) {
		t.Error("SupersededByReload does not read the table's ReloadAll column")
	}
}
