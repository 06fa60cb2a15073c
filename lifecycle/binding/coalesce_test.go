package binding

import (
	"fmt"
	"testing"

	"github.com/addonops/addon-operator/internal/testwait"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
)

// Behind a held task in a named queue, a binding's events wait coalesced
// per object: 1,000 updates of one object leave one context, the newest
// event, beside the context of another object's event; while nothing holds the queue,
// every event runs (docs/operator.md, "Kubernetes bindings").
func TestEventsCoalescePerObject(t *testing.T) {
	t.Parallel()
	b := loader.KubernetesBinding{Name: "obj", Queue: "q", ExecuteHookOnEvent: allEvents, KeepFullObjectsInMemory: true}
	h := hook("", "watch.sh", loader.HookConfig{Kubernetes: []loader.KubernetesBinding{b}})
	tests := []struct {
		name string
		held bool
		want int // runs of obj "a"
	}{
		{"held queue", true, 1},
		{"free queue", false, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, model([]*loader.Hook{h}, nil), true)
			if err := f.bs.Synchronize(t.Context(), []*loader.Hook{h}); err != nil {
				t.Fatal(err)
			}
			mon := f.source.get(h.Name + ":obj")
			updates := 3
			release := make(chan struct{})
			if tt.held {
				updates = 1000
				f.queues.Queue("q").Add(holdTask(release))
				testwait.Until(t, "q held", f.queues.Queue("q").Blocked)
			}
			for i := 1; i <= updates; i++ {
				ev := obj(loader.EventModified, "a")
				ev.Object["v"] = i
				mon.emit(ev)
				if !tt.held {
					testwait.Until(t, "the run", func() bool { return len(f.runner.all()) == i })
				}
			}
			mon.emit(obj(loader.EventAdded, "b"))
			if tt.held {
				// b's event joins the hook's waiting run (v1), as one more context
				if n := f.queued("q"); n != 2 {
					t.Fatalf("queue q holds %d tasks; want the held one and one run", n)
				}
				close(release)
			}
			testwait.Until(t, "queues idle", f.idle)
			var runsA []string
			for _, r := range f.runner.all() {
				for _, c := range r.contexts {
					if c["object"].(map[string]any)["metadata"].(map[string]any)["name"] == "a" {
						runsA = append(runsA, fmt.Sprint(c["watchEvent"]))
					}
				}
			}
			if len(runsA) != tt.want {
				t.Fatalf("object a: %d contexts, want %d", len(runsA), tt.want)
			}
			last := f.runner.all()[len(f.runner.all())-1]
			if tt.held && (len(last.contexts) != 2 || last.contexts[0]["watchEvent"] != "Modified" || last.contexts[0]["object"].(map[string]any)["v"] != updates) {
				t.Fatalf("the last run's contexts %v, want a's newest Modified and b's Added", briefs(last.contexts))
			}
		})
	}
}

// offer keeps one waiting event per object while coalescing: the newest,
// still typed Added when the object was new; take ends the wait.
func TestWaitingEventsOffer(t *testing.T) {
	t.Parallel()
	ev := func(typ string, v int) kube.ObjectEvent {
		return kube.ObjectEvent{Type: typ, Name: "a", FilterResult: v}
	}
	tests := []struct {
		name     string
		coalesce bool
		events   []kube.ObjectEvent
		queued   int    // offers that asked for a run
		last     string // the first waiting event when its run takes it: TYPE/VALUE
	}{
		{"coalescing: Added then Modified stays Added, newest object", true,
			[]kube.ObjectEvent{ev(loader.EventAdded, 1), ev(loader.EventModified, 2)}, 1, "Added/2"},
		{"coalescing: Modified then Deleted", true,
			[]kube.ObjectEvent{ev(loader.EventModified, 1), ev(loader.EventDeleted, 2)}, 1, "Deleted/2"},
		{"not coalescing: one run per event", false,
			[]kube.ObjectEvent{ev(loader.EventAdded, 1), ev(loader.EventModified, 2)}, 2, "Added/1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var w waitingEvents
			var first *waitingEvent
			queued := 0
			for _, e := range tt.events {
				if we := w.offer("k", e, tt.coalesce); we != nil {
					queued++
					if first == nil {
						first = we
					}
				}
			}
			got := w.take("k", first)
			if queued != tt.queued || fmt.Sprintf("%s/%v", got.Type, got.FilterResult) != tt.last {
				t.Fatalf("queued %d, took %s/%v; want %d, %s", queued, got.Type, got.FilterResult, tt.queued, tt.last)
			}
		})
	}
	// a run that took its event: a later one queues a run of its own
	var w waitingEvents
	we := w.offer("k", ev(loader.EventAdded, 1), true)
	w.take("k", we)
	if w.offer("k", ev(loader.EventModified, 2), true) == nil {
		t.Fatal("an event after the run took its own was coalesced into it")
	}
}

// A retried run keeps only the newest activation of each object.
func TestLatestPerObject(t *testing.T) {
	t.Parallel()
	acts := []activation{{binding: "1", object: "a"}, {binding: "2", object: "b"}, {binding: "3"}, {binding: "4", object: "a"}}
	var got []string
	for _, a := range latestPerObject(acts) {
		got = append(got, a.binding)
	}
	if fmt.Sprint(got) != "[2 3 4]" {
		t.Fatalf("kept %v, want [2 3 4]", got)
	}
}
