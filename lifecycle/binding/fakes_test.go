package binding

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"

	"github.com/addonops/addon-operator/internal/testclock"
	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// The consumer-side fakes of the bindings' unit tests: the hook runner,
// the steps and the monitor source, with the real runstate holders, queues
// and a manual clock.

// run is one hook run the fake runner saw.
type run struct {
	hook, binding string
	contexts      []map[string]any
}

// fakeRunner records runs; changed lists the hooks whose runs change values.
type fakeRunner struct {
	mu      sync.Mutex
	runs    []run
	changed map[string]bool
}

var _ HookRunner = (*fakeRunner)(nil)

func (f *fakeRunner) RunHook(_ context.Context, h *loader.Hook, binding string, bc []map[string]any, _ bool) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs = append(f.runs, run{h.Name, binding, bc})
	return f.changed[h.Name], nil
}

func (f *fakeRunner) all() []run {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.runs)
}

// fakeFollowUps records what event hooks' results ask of the steps;
// converge closes Converged.
type fakeFollowUps struct {
	mu        sync.Mutex
	asked     []string
	converged chan struct{}
}

var _ FollowUps = (*fakeFollowUps)(nil)

func newFakeFollowUps() *fakeFollowUps { return &fakeFollowUps{converged: make(chan struct{})} }

func (f *fakeFollowUps) QueueReloadAll()              { f.record("reload all") }
func (f *fakeFollowUps) QueueModuleRun(module string) { f.record("run " + module) }
func (f *fakeFollowUps) Converged() <-chan struct{}   { return f.converged }
func (f *fakeFollowUps) converge()                    { close(f.converged) }

func (f *fakeFollowUps) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, s)
}

func (f *fakeFollowUps) all() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked)
}

// fakeSource hands out fakeMonitors, by spec name (HOOK:BINDING).
type fakeSource struct {
	mu       sync.Mutex
	monitors map[string]*fakeMonitor
	objects  map[string][]kube.ObjectEvent // what a new monitor sees, by spec name
}

var _ MonitorSource = (*fakeSource)(nil)

func (s *fakeSource) NewMonitor(spec kube.MonitorSpec, handler func(kube.ObjectEvent)) (Monitor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.monitors == nil {
		s.monitors = map[string]*fakeMonitor{}
	}
	m := &fakeMonitor{spec: spec, handler: handler, objects: slices.Clone(s.objects[spec.Name])}
	s.monitors[spec.Name] = m
	return m, nil
}

func (s *fakeSource) Watches() []kube.WatchInfo { return nil }

func (s *fakeSource) get(name string) *fakeMonitor {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.monitors[name]
}

// fakeMonitor is a binding's objects as the test sets them; emit is a
// watch event (the handler decides whether it queues a run).
type fakeMonitor struct {
	spec    kube.MonitorSpec
	handler func(kube.ObjectEvent)
	mu      sync.Mutex
	objects []kube.ObjectEvent
	started bool
	stopped bool
}

func (m *fakeMonitor) Start(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.started = true
	return nil
}

func (m *fakeMonitor) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopped = true
}

func (m *fakeMonitor) isStopped() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stopped
}

func (m *fakeMonitor) Snapshot() []kube.ObjectEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.objects)
}

func (m *fakeMonitor) Len() int          { return len(m.Snapshot()) }
func (m *fakeMonitor) Kind() string      { return m.spec.Kind }
func (m *fakeMonitor) LastError() string { return "" }

// emit sets the object in the snapshot and hands the event to the binding.
func (m *fakeMonitor) emit(ev kube.ObjectEvent) {
	m.mu.Lock()
	m.objects = slices.DeleteFunc(m.objects, func(o kube.ObjectEvent) bool { return o.Name == ev.Name })
	if ev.Type != loader.EventDeleted {
		m.objects = append(m.objects, ev)
	}
	m.mu.Unlock()
	m.handler(ev)
}

// fixture is a Bindings over the fakes, a tree and a manual clock.
type fixture struct {
	bs      *Bindings
	trees   *runstate.Trees
	modules *runstate.Modules
	queues  *queue.Set
	clock   *testclock.Manual
	runner  *fakeRunner
	steps   *fakeFollowUps
	source  *fakeSource
}

// newFixture builds the bindings over model; started, they follow the
// state until the test ends.
func newFixture(t *testing.T, model *loader.Model, start bool) *fixture {
	t.Helper()
	f := &fixture{trees: &runstate.Trees{}, modules: runstate.NewModules(), clock: testclock.New(),
		runner: &fakeRunner{changed: map[string]bool{}}, steps: newFakeFollowUps(), source: &fakeSource{}}
	f.modules.Reset(model)
	f.trees.Start(&runstate.Tree{Model: model})
	ctx, cancel := context.WithCancel(t.Context())
	queues := &runstate.Queues{}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.queues = queue.NewSet(ctx, queue.Options{Logger: logger, RetryMin: time.Millisecond, RetryMax: time.Millisecond})
	queues.Set(f.queues)
	f.bs = New(Options{Logger: logger, Now: f.clock.Now, After: f.clock.After, Monitors: f.source,
		Metrics: metrics.New(prometheus.NewRegistry(), nil), Trees: f.trees, Modules: f.modules, Queues: queues,
		Runner: f.runner, FollowUps: f.steps})
	if start {
		f.bs.Start(ctx)
	}
	t.Cleanup(func() {
		cancel()
		f.queues.Wait()
		f.bs.Stop()
	})
	return f
}

// entries is how many schedule entries run.
func (f *fixture) entries() int {
	f.bs.schedules.mu.Lock()
	defer f.bs.schedules.mu.Unlock()
	return len(f.bs.schedules.entries)
}

// idle: every queue is empty.
func (f *fixture) idle() bool {
	for _, q := range f.queues.Dump() {
		if len(q.Tasks) > 0 {
			return false
		}
	}
	return true
}

var cronParser = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

func mustCron(t *testing.T, spec string) cron.Schedule {
	t.Helper()
	s, err := cronParser.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hook is a v1 hook of module ("" for a global one) with cfg.
func hook(module, name string, cfg loader.HookConfig) *loader.Hook {
	if cfg.Version == "" {
		cfg.Version = "v1"
	}
	if module != "" {
		name = fmt.Sprintf("001-%s/hooks/%s", module, name)
	}
	return &loader.Hook{Name: name, Module: module, Config: &cfg, Hash: name}
}

// model is a tree of global hooks and one module per name with its hooks.
func model(global []*loader.Hook, modules map[string][]*loader.Hook) *loader.Model {
	m := &loader.Model{Global: &loader.Global{Hooks: global}}
	names := make([]string, 0, len(modules))
	for name := range modules {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		m.Modules = append(m.Modules, &loader.Module{Name: name, Key: name, Hooks: modules[name]})
	}
	return m
}

// syncedAfter: the bindings synced a state newer than the modules' version v.
func (f *fixture) syncedAfter(v uint64) bool { return f.bs.synced.Load() > v }

// holdTask holds its queue until release is closed.
func holdTask(release <-chan struct{}) *queue.Task {
	return &queue.Task{Key: queue.Key{Kind: "Hold"}, Description: "hold", Do: func(context.Context) error {
		select {
		case <-release:
			return nil
		default:
			return queue.Wait("held by the test", release, nil)
		}
	}}
}

// queued is the length of a queue, the running task included.
func (f *fixture) queued(name string) int { return f.queues.Queue(name).Len() }

// brief is a context as "BINDING TYPE [watchEvent] [snapshots=NAMES] [objects=N]".
func brief(c map[string]any) string {
	s := fmt.Sprint(c["binding"])
	if v, ok := c["type"]; ok {
		s += " " + fmt.Sprint(v)
	}
	if v, ok := c["watchEvent"]; ok {
		s += " " + fmt.Sprint(v)
	}
	if snaps, ok := c["snapshots"].(map[string]any); ok {
		names := make([]string, 0, len(snaps))
		for n := range snaps {
			names = append(names, n)
		}
		slices.Sort(names)
		s += " snapshots=" + strings.Join(names, ",")
	}
	if objs, ok := c["objects"].([]map[string]any); ok {
		s += fmt.Sprintf(" objects=%d", len(objs))
	}
	return s
}

func briefs(cs []map[string]any) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, brief(c))
	}
	return out
}

func assertRuns(t *testing.T, got, want [][]string) {
	t.Helper()
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("runs %q, want %q", got, want)
	}
}
