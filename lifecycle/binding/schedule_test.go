package binding

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/addonops/addon-operator/internal/testclock"
	"github.com/addonops/addon-operator/internal/testwait"
	"github.com/addonops/addon-operator/loader"
)

// A schedule fires on the operator's clock: once per activation reached,
// never before, and not after it was removed or stopped.
func TestSchedulesOnInjectedClock(t *testing.T) {
	t.Parallel()
	clock := testclock.New()
	s := newSchedules(clock.Now, clock.After)
	s.start(t.Context())
	var fired atomic.Int64
	fires := make(chan struct{}, 10)
	s.set(map[string]scheduled{"k": {mustCron(t, "*/10 * * * * *"), func() { fired.Add(1); fires <- struct{}{} }}})
	testwait.Until(t, "the entry to wait", func() bool { return clock.Waiting() == 1 })
	clock.Advance(9 * time.Second)
	if fired.Load() != 0 {
		t.Fatal("fired before its activation")
	}
	clock.Advance(time.Second)
	<-fires
	testwait.Until(t, "the next wait", func() bool { return clock.Waiting() == 1 })
	clock.Advance(10 * time.Second)
	<-fires
	if n := fired.Load(); n != 2 {
		t.Fatalf("fired %d times", n)
	}
	s.set(nil)
	s.stop()
	clock.Advance(time.Minute)
	if n := fired.Load(); n != 2 {
		t.Fatalf("a removed schedule fired: %d", n)
	}
}

// A schedule with no activation (30 February) never fires and does not spin.
func TestScheduleWithoutActivation(t *testing.T) {
	t.Parallel()
	clock := testclock.New()
	s := newSchedules(clock.Now, clock.After)
	s.start(t.Context())
	var fired atomic.Int64
	s.set(map[string]scheduled{"never": {mustCron(t, "0 0 0 30 2 *"), func() { fired.Add(1) }}})
	s.stop()
	if n := fired.Load(); n != 0 {
		t.Fatalf("fired %d times", n)
	}
}

// Schedule firings queue runs with the documented contexts (docs/operator.md,
// "Schedule bindings"): typed Schedule for a v1 hook, the binding name
// only for a v0 one, snapshots of includeSnapshotsFrom, a Group context in
// a group; a v1 hook's firings join its run waiting at the queue's tail,
// a v0 hook's firing is absorbed by a run of the same binding waiting there.
func TestScheduleRuns(t *testing.T) {
	t.Parallel()
	every := mustCron(t, "*/10 * * * * *")
	pods := loader.KubernetesBinding{Name: "pods", Group: "g"}
	tests := []struct {
		name    string
		cfg     loader.HookConfig
		firings int
		want    [][]string // per run, the brief of each context
	}{
		{"v1", loader.HookConfig{Schedules: []loader.ScheduleBinding{{Name: "s", Schedule: every, Queue: "q"}}}, 1,
			[][]string{{"s Schedule"}}},
		{"v0", loader.HookConfig{Version: "v0", Schedules: []loader.ScheduleBinding{{Name: "s", Schedule: every, Queue: "q"}}}, 1,
			[][]string{{"s"}}},
		{"v1 with snapshots", loader.HookConfig{Kubernetes: []loader.KubernetesBinding{{Name: "pods"}},
			Schedules: []loader.ScheduleBinding{{Name: "s", Schedule: every, Queue: "q", IncludeSnapshotsFrom: []string{"pods"}}}}, 1,
			[][]string{{"s Schedule snapshots=pods"}}},
		{"v1 in a group", loader.HookConfig{Kubernetes: []loader.KubernetesBinding{pods},
			Schedules: []loader.ScheduleBinding{{Name: "s", Schedule: every, Queue: "q", Group: "g"}}}, 1,
			[][]string{{"s Group snapshots=pods"}}},
		{"v1 firings join while the queue is held", loader.HookConfig{Schedules: []loader.ScheduleBinding{{Name: "s", Schedule: every, Queue: "q"}}}, 3,
			[][]string{{"s Schedule", "s Schedule", "s Schedule"}}},
		{"v0 firings are absorbed while the queue is held", loader.HookConfig{Version: "v0", Schedules: []loader.ScheduleBinding{{Name: "s", Schedule: every, Queue: "q"}}}, 3,
			[][]string{{"s"}}},
		{"v1 group firings compact into one context", loader.HookConfig{Kubernetes: []loader.KubernetesBinding{pods},
			Schedules: []loader.ScheduleBinding{{Name: "s", Schedule: every, Queue: "q", Group: "g"}}}, 2,
			[][]string{{"s Group snapshots=pods"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := hook("", "h.sh", tt.cfg)
			f := newFixture(t, model([]*loader.Hook{h}, nil), true)
			// the queue is held until every firing is queued
			release := make(chan struct{})
			f.queues.Queue("q").Add(holdTask(release))
			f.steps.converge()
			for range tt.firings {
				testwait.Until(t, "the schedule to wait", func() bool { return f.clock.Waiting() == 1 })
				f.clock.Advance(10 * time.Second)
			}
			// the entry waits again once its last firing is queued
			testwait.Until(t, "the last firing queued", func() bool { return f.clock.Waiting() == 1 })
			if n := f.queued("q"); n != 2 {
				t.Fatalf("queue q holds %d tasks, want the held one and one run", n)
			}
			close(release)
			testwait.Until(t, "queues idle", f.idle)
			var got [][]string
			for _, r := range f.runner.all() {
				got = append(got, briefs(r.contexts))
			}
			assertRuns(t, got, tt.want)
		})
	}
}
