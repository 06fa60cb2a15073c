package lifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/lifecycle/taskkind"

	"github.com/addonops/addon-operator/queue"
)

// TestReloadSupersedesDriftCorrect: a reload that pre-empts "main" drops
// the waiting drift corrections (docs/operator.md, "Drift"); that one
// waits per module is driftcheck's TestCorrectionQueuedOncePerModule.
func TestReloadSupersedesDriftCorrect(t *testing.T) {
	set := queue.NewSet(t.Context(), queue.Options{Logger: quiet()})
	queues := &runstate.Queues{}
	queues.Set(set)
	main := set.Main()
	block, started := make(chan struct{}), make(chan struct{})
	main.Add(&queue.Task{Key: queue.Key{Kind: "gate"}, Do: func(context.Context) error {
		close(started)
		<-block
		return nil
	}})
	<-started
	for _, m := range []string{"web", "echo"} {
		main.Add(&queue.Task{Key: queue.Key{Kind: kindDriftCorrect, Module: m}, Do: func(context.Context) error { return nil }})
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
