package binding

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/addonops/addon-operator/internal/testwait"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
)

var allEvents = []string{loader.EventAdded, loader.EventModified, loader.EventDeleted}

func obj(typ, name string) kube.ObjectEvent {
	return kube.ObjectEvent{Type: typ, Namespace: "ns", Name: name, Object: map[string]any{"metadata": map[string]any{"name": name}}}
}

// Kubernetes bindings on a fake monitor source (docs/operator.md,
// "Kubernetes bindings"): the Synchronization run (waited for, in its own
// queue, or none), a group's one Synchronization, Event contexts of the
// events a binding asks for, v0's event fields.
func TestKubernetesRuns(t *testing.T) {
	t.Parallel()
	cm := func(name string, mod func(*loader.KubernetesBinding)) loader.KubernetesBinding {
		b := loader.KubernetesBinding{Name: name, APIVersion: "v1", Kind: "ConfigMap", ExecuteHookOnEvent: allEvents,
			ExecuteHookOnSynchronization: true, WaitForSynchronization: true, KeepFullObjectsInMemory: true}
		if mod != nil {
			mod(&b)
		}
		return b
	}
	tests := []struct {
		name     string
		cfg      loader.HookConfig
		events   map[string][]kube.ObjectEvent // by binding, emitted after Synchronize
		syncRuns [][]string                    // runs by the time Synchronize returned
		want     [][]string                    // every run, once the queues are idle
	}{
		{"waited-for Synchronization, then an event",
			loader.HookConfig{Kubernetes: []loader.KubernetesBinding{cm("cms", nil)}},
			map[string][]kube.ObjectEvent{"cms": {obj(loader.EventModified, "a")}},
			[][]string{{"cms Synchronization objects=1"}},
			[][]string{{"cms Synchronization objects=1"}, {"cms Event Modified"}}},
		{"Synchronization in the binding's queue",
			loader.HookConfig{Kubernetes: []loader.KubernetesBinding{cm("cms", func(b *loader.KubernetesBinding) { b.WaitForSynchronization, b.Queue = false, "q" })}},
			nil, nil,
			[][]string{{"cms Synchronization objects=1"}}},
		{"no Synchronization; events only of the types asked for",
			loader.HookConfig{Kubernetes: []loader.KubernetesBinding{cm("cms", func(b *loader.KubernetesBinding) {
				b.ExecuteHookOnSynchronization, b.ExecuteHookOnEvent = false, []string{loader.EventDeleted}
			})}},
			map[string][]kube.ObjectEvent{"cms": {obj(loader.EventModified, "a"), obj(loader.EventDeleted, "a")}},
			nil,
			[][]string{{"cms Event Deleted"}}},
		{"a group: one Synchronization named after its last binding",
			loader.HookConfig{Kubernetes: []loader.KubernetesBinding{
				cm("one", func(b *loader.KubernetesBinding) { b.Group = "g" }),
				cm("two", func(b *loader.KubernetesBinding) { b.Group = "g" }),
			}},
			map[string][]kube.ObjectEvent{"one": {obj(loader.EventAdded, "b")}},
			[][]string{{"two Group snapshots=one,two"}},
			[][]string{{"two Group snapshots=one,two"}, {"one Group snapshots=one,two"}}},
		{"includeSnapshotsFrom in Synchronization and Event",
			loader.HookConfig{Kubernetes: []loader.KubernetesBinding{
				cm("cms", func(b *loader.KubernetesBinding) { b.IncludeSnapshotsFrom = []string{"other"} }),
				cm("other", func(b *loader.KubernetesBinding) { b.ExecuteHookOnSynchronization, b.ExecuteHookOnEvent = false, nil }),
			}},
			map[string][]kube.ObjectEvent{"cms": {obj(loader.EventAdded, "c")}},
			[][]string{{"cms Synchronization snapshots=other objects=1"}},
			[][]string{{"cms Synchronization snapshots=other objects=1"}, {"cms Event Added snapshots=other"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := hook("", "h.sh", tt.cfg)
			f := newFixture(t, model([]*loader.Hook{h}, nil), true)
			f.source.objects = map[string][]kube.ObjectEvent{}
			for _, b := range tt.cfg.Kubernetes {
				f.source.objects[h.Name+":"+b.Name] = []kube.ObjectEvent{obj(loader.EventAdded, "seen-"+b.Name)}
			}
			if err := f.bs.Synchronize(t.Context(), []*loader.Hook{h}); err != nil {
				t.Fatal(err)
			}
			var got [][]string
			for _, r := range f.runner.all() {
				got = append(got, briefs(r.contexts))
			}
			assertRuns(t, got, tt.syncRuns)
			for _, b := range tt.cfg.Kubernetes {
				for _, ev := range tt.events[b.Name] {
					f.source.get(h.Name + ":" + b.Name).emit(ev)
				}
			}
			testwait.Until(t, "queues idle", f.idle)
			got = nil
			for _, r := range f.runner.all() {
				got = append(got, briefs(r.contexts))
			}
			assertRuns(t, got, tt.want)
			// a second Synchronize (a retry, a reload) runs nothing again
			n := len(f.runner.all())
			if err := f.bs.Synchronize(t.Context(), []*loader.Hook{h}); err != nil {
				t.Fatal(err)
			}
			testwait.Until(t, "queues idle", f.idle)
			if m := len(f.runner.all()); m != n {
				t.Fatalf("a second Synchronize ran the hook again: %d → %d runs", n, m)
			}
		})
	}
}

// A v0 hook's event context carries the original's resource fields.
func TestKubernetesV0EventContext(t *testing.T) {
	t.Parallel()
	b := loader.KubernetesBinding{Name: "cms", Kind: "configmap", V0: true, ExecuteHookOnEvent: allEvents}
	c := eventContext(b, "ConfigMap", obj(loader.EventDeleted, "x"), &snapshotter{})
	want := map[string]any{"binding": "cms", "type": "Event", "watchEvent": "Deleted",
		"resourceEvent": "delete", "resourceNamespace": "ns", "resourceKind": "ConfigMap", "resourceName": "x"}
	if fmt.Sprint(c) != fmt.Sprint(want) {
		t.Fatalf("context %v, want %v", c, want)
	}
}

// Ordered bindings carry the snapshots of every kubernetes binding of the
// hook, but onStartup; a v0 hook's only when it has kubernetes bindings.
func TestOrderedContext(t *testing.T) {
	t.Parallel()
	withKube := loader.HookConfig{Kubernetes: []loader.KubernetesBinding{{Name: "cms"}}}
	tests := []struct {
		name    string
		cfg     loader.HookConfig
		binding string
		want    string
	}{
		{"v1 onStartup", withKube, loader.OnStartup, "onStartup"},
		{"v1 beforeHelm", withKube, loader.BeforeHelm, "beforeHelm snapshots=cms"},
		{"v1 without kubernetes", loader.HookConfig{}, loader.BeforeHelm, "beforeHelm snapshots="},
		{"v0 without kubernetes", loader.HookConfig{Version: "v0"}, loader.BeforeHelm, "beforeHelm"},
		{"v0 with kubernetes", loader.HookConfig{Version: "v0", Kubernetes: withKube.Kubernetes}, loader.AfterHelm, "afterHelm snapshots=cms"},
	}
	f := newFixture(t, model(nil, nil), false)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := f.bs.OrderedContext(hook("", "h.sh", tt.cfg), tt.binding)
			if got := briefs(c); !slices.Equal(got, []string{tt.want}) {
				t.Fatalf("context %q, want %q", got, tt.want)
			}
		})
	}
}

// Without a monitor source, a hook with kubernetes bindings fails, naming
// the hook; hooks without kubernetes bindings need none.
func TestSynchronizeWithoutMonitors(t *testing.T) {
	t.Parallel()
	h := hook("", "h.sh", loader.HookConfig{Kubernetes: []loader.KubernetesBinding{{Name: "cms"}}})
	f := newFixture(t, model([]*loader.Hook{h}, nil), false)
	f.bs.monitors = nil
	if err := f.bs.Synchronize(t.Context(), []*loader.Hook{hook("", "plain.sh", loader.HookConfig{})}); err != nil {
		t.Fatal(err)
	}
	err := f.bs.Synchronize(t.Context(), []*loader.Hook{h})
	if !errors.Is(err, errNoMonitors) {
		t.Fatalf("err = %v, want errNoMonitors", err)
	}
}

// An event hook's result reaches the steps through FollowUps alone: a
// global hook's change of global values asks for a reload, a module hook's
// change of its values for the module's run, no change for nothing; a
// hook whose module is disabled does not run.
func TestEventHookAsksForFollowUps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		module   string
		changed  bool
		disabled bool
		want     []string
		runs     int
	}{
		{"global hook changed values", "", true, false, []string{"reload all"}, 1},
		{"global hook changed nothing", "", false, false, nil, 1},
		{"module hook changed values", "alpha", true, false, []string{"run alpha"}, 1},
		{"module hook of a disabled module", "alpha", true, true, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := hook(tt.module, "h.sh", loader.HookConfig{})
			var tree *loader.Model
			if tt.module == "" {
				tree = model([]*loader.Hook{h}, nil)
			} else {
				tree = model(nil, map[string][]*loader.Hook{tt.module: {h}})
			}
			f := newFixture(t, tree, false)
			f.runner.changed[h.Name] = tt.changed
			if tt.module != "" && !tt.disabled {
				f.modules.Update(tt.module, func(st *runstate.Module) { st.Enabled = true })
			}
			if err := f.bs.runEventHook(t.Context(), h, "b", []map[string]any{{"binding": "b"}}, false); err != nil {
				t.Fatal(err)
			}
			if got := f.steps.all(); !slices.Equal(got, tt.want) {
				t.Fatalf("asked %v, want %v", got, tt.want)
			}
			if n := len(f.runner.all()); n != tt.runs {
				t.Fatalf("%d runs, want %d", n, tt.runs)
			}
		})
	}
}
