package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/addonops/addon-operator/lifecycle/hookrun"
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// Task kinds of kubernetes bindings.
const (
	kindKubeSync  queue.Kind = "KubernetesSynchronization"
	kindKubeEvent queue.Kind = "KubernetesEvent"
)

// MonitorSource starts the monitors behind kubernetes bindings, and lists
// the API server watches they share, for /status.
type MonitorSource interface {
	NewMonitor(spec kube.MonitorSpec, handler func(kube.ObjectEvent)) (Monitor, error)
	Watches() []kube.WatchInfo
}

// Monitor is one kubernetes binding's view of its objects.
type Monitor interface {
	Start(ctx context.Context) error
	Stop()
	// Snapshot is the objects the binding sees now, in a stable order.
	Snapshot() []kube.ObjectEvent
	Len() int
	Kind() string
	LastError() string
}

var _ Monitor = (*kube.Monitor)(nil)

// KubeMonitors is the MonitorSource of the API server behind w.
func KubeMonitors(w *kube.Watcher) MonitorSource { return kubeMonitorSource{w} }

type kubeMonitorSource struct{ w *kube.Watcher }

func (k kubeMonitorSource) NewMonitor(spec kube.MonitorSpec, handler func(kube.ObjectEvent)) (Monitor, error) {
	m, err := k.w.NewMonitor(spec, handler)
	if err != nil {
		return nil, err
	}
	return m, nil
}

func (k kubeMonitorSource) Watches() []kube.WatchInfo { return k.w.Watches() }

// errNoMonitors: a hook has kubernetes bindings, and the operator was
// built without access to the API server's watches.
var errNoMonitors = errors.New("kubernetes bindings need the API server's watches, and none are configured")

// hookMonitors are the running monitors of one hook's kubernetes bindings.
type hookMonitors struct {
	hook     *loader.Hook
	bindings []*bindingMonitor // in the hook's binding order
}

type bindingMonitor struct {
	binding loader.KubernetesBinding
	monitor Monitor
	// live: events are queued. It turns on when the hook's Synchronization
	// context is taken, so every later change reaches the hook as an event
	// and every earlier one is in the objects it saw.
	live atomic.Bool
	// synced: the Synchronization run is done (or queued in its own queue).
	synced bool
}

// bindings are the event sources of hooks (docs/lifecycle.md, steps 2 and
// 9–12): the monitors of kubernetes bindings and the schedules, which turn
// events into hook runs in the bindings' queues, and the binding contexts
// those runs and the ordered bindings get.
type bindings struct {
	cfg       Config
	logger    *slog.Logger
	metrics   *metrics.Recorder
	trees     *runstate.Trees
	modules   *runstate.Modules
	queues    *runstate.Queues
	run       *hookrun.Runner
	steps     followUps // what a hook's values change asks for (eventruns.go)
	kube      kubeMonitors
	schedules *schedules
	limits    hookLimits
	waiting   waitingEvents // coalesce.go
	// schedMu makes each syncSchedules' read of the state and its set one
	// step: modules of one weight finish at once
	schedMu sync.Mutex
	runCtx  context.Context // Run's: monitors live as long as it
}

// kubeMonitors are the operator's running monitors, by hook.
type kubeMonitors struct {
	mu    sync.Mutex
	hooks map[string]*hookMonitors // by loader.Hook.Key
}

// monitorSyncTimeout bounds the wait for a binding's first list: a list
// that keeps failing (an API that is down) fails the task that starts the
// monitor, which is retried with backoff, so a change can pre-empt it.
const monitorSyncTimeout = time.Minute

// monitorSpec turns a binding into what the monitor watches.
func monitorSpec(h *loader.Hook, b loader.KubernetesBinding) kube.MonitorSpec {
	var fields []string
	for _, r := range b.FieldSelector {
		op := "="
		if r.Operator == "!=" || r.Operator == "NotEquals" {
			op = "!="
		}
		fields = append(fields, r.Field+op+r.Value)
	}
	return kube.MonitorSpec{
		Name:       h.Name + ":" + b.Name,
		APIVersion: b.APIVersion, Kind: b.Kind, Namespaces: b.Namespaces, NamespaceLabelSelector: b.NamespaceLabelSelector,
		LabelSelector: b.LabelSelector, FieldSelector: strings.Join(fields, ","), Names: b.NameSelector,
		Events: b.ExecuteHookOnEvent, JqFilter: b.Query, KeepFullObjects: b.KeepFullObjectsInMemory,
		SyncTimeout: monitorSyncTimeout,
	}
}

// withKubernetes returns the hooks that have kubernetes bindings, by name
// (docs/lifecycle.md, step 2).
func withKubernetes(hooks []*loader.Hook) []*loader.Hook {
	var out []*loader.Hook
	for _, h := range hooks {
		if len(h.Config.Kubernetes) > 0 {
			out = append(out, h)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ensureMonitors starts the monitors of a hook's bindings unless they run;
// it waits for each first list. The monitors live with the hook, not with
// the task that starts them: they run under Run's context.
func (bs *bindings) ensureMonitors(h *loader.Hook) (*hookMonitors, error) {
	id := h.Key()
	bs.kube.mu.Lock()
	hm := bs.kube.hooks[id]
	bs.kube.mu.Unlock()
	if hm != nil {
		return hm, nil
	}
	if bs.cfg.Monitors == nil {
		return nil, fmt.Errorf("hook %s: %w", h.Name, errNoMonitors)
	}
	hm = &hookMonitors{hook: h}
	for _, b := range h.Config.Kubernetes {
		bm := &bindingMonitor{binding: b}
		spec := monitorSpec(h, b)
		labels := kubeLabels(h, b)
		jq := bs.metrics.KubeJqSeconds.WithLabelValues(labels...)
		spec.OnFilter = func(d time.Duration) { jq.Observe(d.Seconds()) }
		handled := bs.metrics.KubeEventSeconds.WithLabelValues(labels...)
		m, err := bs.cfg.Monitors.NewMonitor(spec, func(ev kube.ObjectEvent) {
			// an empty executeHookOnEvent wants no events, which the
			// monitor reads as all of them
			if bm.live.Load() && slices.Contains(b.ExecuteHookOnEvent, ev.Type) {
				start := bs.cfg.Now()
				bs.queueKubeEvent(h, bm, ev)
				handled.Observe(bs.cfg.Now().Sub(start).Seconds())
			}
		})
		if err == nil {
			bm.monitor = m
			err = m.Start(bs.runCtx)
		}
		if err != nil {
			stopAll(hm)
			return nil, fmt.Errorf("hook %s: binding %s: %w", h.Name, b.Name, err)
		}
		hm.bindings = append(hm.bindings, bm)
	}
	bs.kube.mu.Lock()
	bs.kube.hooks[id] = hm
	bs.kube.mu.Unlock()
	bs.logger.Info("watching for hook", "hook", h.Name, "module", h.Module, "bindings", len(hm.bindings))
	return hm, nil
}

func stopAll(hm *hookMonitors) {
	for _, bm := range hm.bindings {
		if bm.monitor != nil {
			bm.monitor.Stop()
		}
	}
}

// synchronize starts the monitors of the hooks' kubernetes bindings and
// runs their Synchronization (docs/lifecycle.md, steps 2 and 5), by hook
// name, one run per binding (one per group). Bindings already synchronized
// are skipped, so a retry resumes where a failure stopped.
func (bs *bindings) synchronize(ctx context.Context, hooks []*loader.Hook) error {
	for _, h := range withKubernetes(hooks) {
		hm, err := bs.ensureMonitors(h)
		if err != nil {
			return err
		}
		for _, bm := range hm.bindings {
			if bm.synced {
				continue
			}
			b := bm.binding
			group := groupOf(hm, b.Group)
			if !b.ExecuteHookOnSynchronization {
				markSynced(group, bm)
				continue
			}
			if !b.WaitForSynchronization {
				// queued before the binding turns live, so no Event run
				// comes ahead of its Synchronization in that queue
				bs.queues.Get().Queue(b.Queue).Add(bs.kubeSyncTask(h, hm, bm, group))
				markSynced(group, bm)
				continue
			}
			name, bc := bs.syncContext(hm, bm, group)
			if _, err := bs.run.RunHook(ctx, h, name, bc, false); err != nil {
				return err
			}
			markSynced(group, bm)
		}
	}
	return nil
}

// groupOf lists the bindings of a group ("" or no monitors → none).
func groupOf(hm *hookMonitors, group string) []*bindingMonitor {
	if group == "" || hm == nil {
		return nil
	}
	var out []*bindingMonitor
	for _, bm := range hm.bindings {
		if bm.binding.Group == group {
			out = append(out, bm)
		}
	}
	return out
}

// markSynced marks a binding, or its whole group, synchronized and live.
func markSynced(group []*bindingMonitor, bm *bindingMonitor) {
	for _, x := range append(group, bm) {
		x.synced = true
		x.live.Store(true)
	}
}

// kubeSyncTask is a Synchronization that does not hold up the main queue
// (waitForSynchronization: false): it runs in the binding's queue.
func (bs *bindings) kubeSyncTask(h *loader.Hook, hm *hookMonitors, bm *bindingMonitor, group []*bindingMonitor) *queue.Task {
	return &queue.Task{
		Key:          queue.Key{Kind: kindKubeSync, Module: h.Module, Hook: metrics.HookLabel(h), Binding: bm.binding.Name},
		Description:  h.Name + ": " + bm.binding.Name,
		AllowFailure: bm.binding.AllowFailure,
		Do: func(ctx context.Context) error {
			name, bc := bs.syncContext(hm, bm, group)
			return bs.runEventHook(ctx, h, name, bc, bm.binding.AllowFailure)
		},
	}
}

// syncContext is the Synchronization binding context of one binding, or
// the Group context of its group. Taking it turns the binding live.
func (bs *bindings) syncContext(hm *hookMonitors, bm *bindingMonitor, group []*bindingMonitor) (string, []map[string]any) {
	for _, x := range append(group, bm) {
		x.live.Store(true)
	}
	s := &snapshotter{hm: hm}
	if len(group) > 0 {
		// shell-operator combines the Synchronization of a group's
		// bindings into one run and keeps the last binding's context
		last := group[len(group)-1].binding
		return last.Name, []map[string]any{groupContext(hm.hook, last.Name, last.Group, last.IncludeSnapshotsFrom, s)}
	}
	b := bm.binding
	c := map[string]any{"binding": b.Name, "type": typeSynchronization, "objects": s.of(b.Name)}
	if len(b.IncludeSnapshotsFrom) > 0 {
		c["snapshots"] = s.from(b.IncludeSnapshotsFrom)
	}
	return b.Name, []map[string]any{c}
}

// runningMonitors returns the monitors of the hook (nil when none run).
func (bs *bindings) runningMonitors(h *loader.Hook) *hookMonitors {
	bs.kube.mu.Lock()
	defer bs.kube.mu.Unlock()
	return bs.kube.hooks[h.Key()]
}

// orderedContext is the binding context of an ordered binding
// (docs/lifecycle.md, steps 3, 5, 6 and 8). As in the original, every
// ordered binding but onStartup of a v1 hook carries the snapshots of all
// the hook's kubernetes bindings ({} when it has none); a v0 hook gets them
// when it has kubernetes bindings.
func (bs *bindings) orderedContext(h *loader.Hook, binding string) []map[string]any {
	c := map[string]any{"binding": binding}
	if binding != loader.OnStartup && (!isV0(h) || len(h.Config.Kubernetes) > 0) {
		names := make([]string, 0, len(h.Config.Kubernetes))
		for _, k := range h.Config.Kubernetes {
			names = append(names, k.Name)
		}
		c["snapshots"] = (&snapshotter{hm: bs.runningMonitors(h)}).from(names)
	}
	return []map[string]any{c}
}

// queueKubeEvent queues an Event run in the binding's queue.
func (bs *bindings) queueKubeEvent(h *loader.Hook, bm *bindingMonitor, ev kube.ObjectEvent) {
	queues := bs.queues.Get()
	if queues == nil {
		return
	}
	b := bm.binding
	bs.metrics.KubeEvent(h, b.Name)
	kind := bm.monitor.Kind()
	key := eventKey(b.Queue, h, b.Name, kind, ev)
	q := queues.Queue(b.Queue)
	we := bs.waiting.offer(key, ev, q.Blocked())
	if we == nil {
		return // it replaced the object's event that waits
	}
	var taken kube.ObjectEvent
	a := activation{binding: b.Name, group: b.Group, object: key, take: func() { taken = bs.waiting.take(key, we) },
		context: func(s *snapshotter) map[string]any {
			if b.Group != "" {
				return groupContext(h, b.Name, b.Group, b.IncludeSnapshotsFrom, s)
			}
			return eventContext(b, kind, taken, s)
		}}
	q.Add(bs.hookRunTask(h, kindKubeEvent, b.Queue, b.AllowFailure, a))
}

// syncMonitors stops the monitors of hooks that are gone from the tree,
// changed, or whose module is not enabled any more.
func (bs *bindings) syncMonitors() {
	model, _ := bs.trees.Current()
	want := map[string]bool{}
	for _, h := range model.Global.Hooks {
		want[h.Key()] = true
	}
	states := bs.modules.All()
	for _, m := range model.Modules {
		if states[m.Name].Enabled {
			for _, h := range m.Hooks {
				want[h.Key()] = true
			}
		}
	}
	bs.kube.mu.Lock()
	var stop []*hookMonitors
	for id, hm := range bs.kube.hooks {
		if !want[id] {
			stop = append(stop, hm)
			delete(bs.kube.hooks, id)
		}
	}
	bs.kube.mu.Unlock()
	for _, hm := range stop {
		stopAll(hm)
		bs.logger.Info("stopped watching for hook", "hook", hm.hook.Name, "module", hm.hook.Module)
	}
}

// watchStatus lists the running monitors, by module, hook and binding. It
// reads the monitors after bs.kube.mu is released: a hook run needs that
// lock, and a monitor's count waits on its watch (docs/operator.md).
func (bs *bindings) watchStatus() []WatchStatus {
	bs.kube.mu.Lock()
	hooks := make([]*hookMonitors, 0, len(bs.kube.hooks))
	for _, hm := range bs.kube.hooks {
		hooks = append(hooks, hm)
	}
	bs.kube.mu.Unlock()
	out := []WatchStatus{}
	for _, hm := range hooks {
		for _, bm := range hm.bindings {
			out = append(out, WatchStatus{
				Hook: hm.hook.Name, Module: hm.hook.Module, Binding: bm.binding.Name, Kind: bm.monitor.Kind(),
				Objects: bm.monitor.Len(), LastError: bm.monitor.LastError(),
			})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Module != b.Module {
			return a.Module < b.Module
		}
		if a.Hook != b.Hook {
			return a.Hook < b.Hook
		}
		return a.Binding < b.Binding
	})
	return out
}

// stopMonitors stops every monitor (the operator is stopping).
func (bs *bindings) stopMonitors() {
	bs.kube.mu.Lock()
	hooks := bs.kube.hooks
	bs.kube.hooks = map[string]*hookMonitors{}
	bs.kube.mu.Unlock()
	for _, hm := range hooks {
		stopAll(hm)
	}
}

// globalSyncTask is step 2: the global hooks' monitors and Synchronization.
// 'reload all modules' repeats it, which starts the monitors of global
// hooks that a new tree added or changed.
func (bs *bindings) globalSyncTask() *queue.Task {
	return &queue.Task{
		Key:         queue.Key{Kind: kindKubeSync},
		Description: "global hooks: kubernetes Synchronization",
		Do: func(ctx context.Context) error {
			model, _ := bs.trees.Current()
			return bs.synchronize(ctx, model.Global.Hooks)
		},
	}
}
