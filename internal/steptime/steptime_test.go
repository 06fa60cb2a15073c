package steptime

import (
	"context"
	"testing"
	"time"
)

type observed map[string]time.Duration

func (o observed) ObserveStep(step string, took time.Duration) { o[step] += took }

func TestMark(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		clock bool
		want  []string
	}{
		{"a run's clock observes each step", true, []string{"a", "b"}},
		{"without a clock nothing is observed", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := observed{}
			ctx := context.Background()
			if tc.clock {
				ctx = Start(ctx, obs)
			}
			time.Sleep(2 * time.Millisecond) // step a's own time, measured below
			Mark(ctx, "a")
			Mark(ctx, "b")
			if len(obs) != len(tc.want) {
				t.Fatalf("observed %v, want the steps %v", obs, tc.want)
			}
			for _, s := range tc.want {
				if _, ok := obs[s]; !ok {
					t.Fatalf("step %s not observed: %v", s, obs)
				}
			}
			if tc.clock && (obs["a"] < 2*time.Millisecond || obs["b"] >= obs["a"]) {
				t.Fatalf("step a took %s and b %s: a's time is since Start, b's since a", obs["a"], obs["b"])
			}
		})
	}
}

func TestStartNilObserver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if got := Start(ctx, nil); got != ctx {
		t.Fatal("Start with no observer made a new context")
	}
}
