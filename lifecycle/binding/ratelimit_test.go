package binding

import (
	"testing"
	"time"

	"github.com/addonops/addon-operator/loader"
)

// A hook's settings let executionBurst runs start at once, then one per
// executionMinInterval, on the operator's clock; a hook without settings
// never waits.
func TestHookLimits(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var waited []time.Duration
	after := func(d time.Duration) <-chan time.Time {
		waited = append(waited, d)
		now = now.Add(d)
		ch := make(chan time.Time, 1)
		ch <- now
		return ch
	}
	clock := func() time.Time { return now }
	limited := &loader.Hook{Name: "h.sh", Config: &loader.HookConfig{Settings: &loader.HookSettings{ExecutionMinInterval: time.Second, ExecutionBurst: 2}}}
	free := &loader.Hook{Name: "free.sh", Config: &loader.HookConfig{}}
	var l hookLimits
	for range 4 {
		if err := l.wait(t.Context(), limited, clock, after); err != nil {
			t.Fatal(err)
		}
		if err := l.wait(t.Context(), free, clock, after); err != nil {
			t.Fatal(err)
		}
	}
	// two at once, then the third and the fourth a second apart
	if len(waited) != 2 || waited[0] != time.Second || waited[1] != time.Second {
		t.Fatalf("waits = %v, want [1s 1s]", waited)
	}
}
