package binding

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/lifecycle/taskkind"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// schedules runs the schedule bindings (docs/lifecycle.md, steps 11 and 12): each firing
// queues a hook run in the binding's queue. Each entry waits on the
// operator's clock (Options.Now, Options.After), so tests drive schedules
// without sleeping.
type schedules struct {
	now   func() time.Time
	after func(time.Duration) <-chan time.Time

	mu      sync.Mutex
	ctx     context.Context               // Run's; entries stop with it
	entries map[string]context.CancelFunc // by hook, binding and schedule
	wg      sync.WaitGroup
}

func newSchedules(now func() time.Time, after func(time.Duration) <-chan time.Time) *schedules {
	return &schedules{now: now, after: after, entries: map[string]context.CancelFunc{}}
}

// start lets entries run until ctx is done; stop waits for them.
func (s *schedules) start(ctx context.Context) {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
}

func (s *schedules) stop() {
	s.mu.Lock()
	for key, cancel := range s.entries {
		cancel()
		delete(s.entries, key)
	}
	s.ctx = nil
	s.mu.Unlock()
	s.wg.Wait()
}

// set makes the running entries exactly want's: new ones start, missing
// ones stop.
func (s *schedules) set(want map[string]scheduled) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, cancel := range s.entries {
		if _, ok := want[key]; !ok {
			cancel()
			delete(s.entries, key)
		}
	}
	if s.ctx == nil {
		return
	}
	for key, j := range want {
		if _, ok := s.entries[key]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(s.ctx)
		s.entries[key] = cancel
		s.wg.Go(func() { s.run(ctx, j) })
	}
}

// run fires j at each activation of its schedule after now; activations
// missed while a firing was being queued are skipped, as cron does.
func (s *schedules) run(ctx context.Context, j scheduled) {
	for {
		next := j.schedule.Next(s.now())
		if next.IsZero() {
			return // a schedule with no activation (30 February)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.after(next.Sub(s.now())):
			j.fire()
		}
	}
}

// scheduled is one schedule binding's entry.
type scheduled struct {
	schedule cron.Schedule
	fire     func()
}

func scheduleKey(h *loader.Hook, i int, b loader.ScheduleBinding) string {
	return h.Key() + "\x00" + strconv.Itoa(i) + "\x00" + b.Name + "\x00" + b.Crontab
}

// syncSchedules starts the schedules of global hooks once the first
// reload converged, and of each module once it has run since it was
// enabled; it stops every other (a disabled or removed module's, an old
// tree's). follow calls it at each change of the state it reads.
func (bs *Bindings) syncSchedules() {
	bs.schedMu.Lock()
	defer bs.schedMu.Unlock()
	model, _ := bs.trees.Current()
	want := map[string]scheduled{}
	add := func(h *loader.Hook) {
		if h.Config == nil {
			return
		}
		for i, b := range h.Config.Schedules {
			want[scheduleKey(h, i, b)] = scheduled{b.Schedule, func() { bs.queueScheduled(h, b) }}
		}
	}
	if isClosed(bs.steps.Converged()) {
		for _, h := range model.Global.Hooks {
			add(h)
		}
	}
	moduleHooks(model, bs.modules, func(c *loader.HookConfig) bool { return len(c.Schedules) > 0 },
		func(st runstate.Module) bool { return st.Enabled && st.StartupDone }, add)
	bs.schedules.set(want)
}

// queueScheduled queues one run of a schedule binding in its queue. A v1
// hook's run joins a run of the same hook waiting at the queue's tail
// (hookRunTask); a v0 hook's firing is absorbed by a run of the same
// binding still waiting there, since its context would say nothing more.
func (bs *Bindings) queueScheduled(h *loader.Hook, b loader.ScheduleBinding) {
	queues := bs.queues.Get()
	if queues == nil {
		return
	}
	t := bs.hookRunTask(h, taskkind.ScheduleHook, b.Queue, b.AllowFailure, activation{binding: b.Name, group: b.Group,
		context: func(s *snapshotter) map[string]any { return scheduleContext(h, b, s) }})
	if isV0(h) {
		t.Merge = func(later *queue.Task) bool { return later.Key == t.Key }
	}
	queues.Queue(b.Queue).Add(t)
}

// scheduleContext is a schedule binding's context: typed "Schedule" for a
// v1 hook (a v0 hook's has the binding name only), with the snapshots
// named in includeSnapshotsFrom, or a Group context for a binding in a
// group.
func scheduleContext(h *loader.Hook, b loader.ScheduleBinding, s *snapshotter) map[string]any {
	if b.Group != "" {
		return groupContext(h, b.Name, b.Group, b.IncludeSnapshotsFrom, s)
	}
	c := map[string]any{"binding": b.Name}
	if !isV0(h) {
		c["type"] = typeSchedule
	}
	if len(b.IncludeSnapshotsFrom) > 0 {
		c["snapshots"] = s.from(b.IncludeSnapshotsFrom)
	}
	return c
}

// isClosed: ch is closed (a receive does not block).
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
