package lifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/lifecycle/taskkind"

	"github.com/addonops/addon-operator/queue"
)

// TestDriftCorrectKeyed: a module's DriftCorrect task is keyed by kind and
// module, so at most one waits per module, and a reload that pre-empts
// "main" drops the waiting ones (docs/operator.md, "Drift").
func TestDriftCorrectKeyed(t *testing.T) {
	set := queue.NewSet(t.Context(), queue.Options{Logger: quiet()})
	queues := &runstate.Queues{}
	queues.Set(set)
	d := &driftSteps{queues: queues}
	main := set.Main()
	block, started := make(chan struct{}), make(chan struct{})
	main.Add(&queue.Task{Key: queue.Key{Kind: "gate"}, Do: func(context.Context) error {
		close(started)
		<-block
		return nil
	}})
	<-started
	d.queue("web")
	d.queue("web")
	d.queue("echo")
	if n := main.Len(); n != 3 {
		t.Fatalf("queue length = %d, want 3 (the gate, one correction per module)", n)
	}
	main.Preempt(&queue.Task{Key: queue.Key{Kind: taskkind.ReloadAll}, Do: func(context.Context) error { return nil }}, taskkind.SupersededByReload)
	for _, m := range []string{"web", "echo"} {
		if main.HasQueuedKey(queue.Key{Kind: kindDriftCorrect, Module: m}) {
			t.Errorf("%s's correction still waits after a reload", m)
		}
	}
	close(block)
	deadline := time.Now().Add(10 * time.Second)
	for main.Len() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}
