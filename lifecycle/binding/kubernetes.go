package binding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/taskkind"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// Task kinds of kubernetes bindings.
const ()

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

// monitorSpec turns a binding into what the monitor watches. syncTimeout
// bounds the wait for its first list: a list that keeps failing (an API
// that is down) fails the task that starts the monitor, which is retried
// with backoff, so a change can pre-empt it.
func monitorSpec(h *loader.Hook, b loader.KubernetesBinding, syncTimeout time.Duration) kube.MonitorSpec {
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
		SyncTimeout: syncTimeout,
	}
}

// HasKubernetes: one of the hooks has kubernetes bindings.
func HasKubernetes(hooks []*loader.Hook) bool { return len(withKubernetes(hooks)) > 0 }

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
func (bs *Bindings) ensureMonitors(h *loader.Hook) (*hookMonitors, error) {
	id := h.Key()
	if hm := bs.kube.get(id); hm != nil {
		return hm, nil
	}
	if bs.monitors == nil {
		return nil, fmt.Errorf("hook %s: %w", h.Name, errNoMonitors)
	}
	hm := &hookMonitors{hook: h}
	for _, b := range h.Config.Kubernetes {
		bm := &bindingMonitor{binding: b}
		spec := monitorSpec(h, b, bs.syncTimeout)
		labels := kubeLabels(h, b)
		jq := bs.metrics.KubeJqSeconds.WithLabelValues(labels...)
		spec.OnFilter = func(d time.Duration) { jq.Observe(d.Seconds()) }
		handled := bs.metrics.KubeEventSeconds.WithLabelValues(labels...)
		m, err := bs.monitors.NewMonitor(spec, func(ev kube.ObjectEvent) {
			// an empty executeHookOnEvent wants no events, which the
			// monitor reads as all of them
			if bm.live.Load() && slices.Contains(b.ExecuteHookOnEvent, ev.Type) {
				start := bs.now()
				bs.queueKubeEvent(h, bm, ev)
				handled.Observe(bs.now().Sub(start).Seconds())
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
	bs.kube.add(id, hm)
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

// Synchronize starts the monitors of the hooks' kubernetes bindings and
// runs their Synchronization (docs/lifecycle.md, steps 2 and 5), by hook
// name, one run per binding (one per group). Bindings already synchronized
// are skipped, so a retry resumes where a failure stopped.
func (bs *Bindings) Synchronize(ctx context.Context, hooks []*loader.Hook) error {
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
			name, bc := syncContext(hm, bm, group)
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
func (bs *Bindings) kubeSyncTask(h *loader.Hook, hm *hookMonitors, bm *bindingMonitor, group []*bindingMonitor) *queue.Task {
	return &queue.Task{
		Key:          queue.Key{Kind: taskkind.KubeSync, Module: h.Module, Hook: metrics.HookLabel(h), Binding: bm.binding.Name},
		Description:  h.Name + ": " + bm.binding.Name,
		AllowFailure: bm.binding.AllowFailure,
		Do: func(ctx context.Context) error {
			name, bc := syncContext(hm, bm, group)
			return bs.runEventHook(ctx, h, name, bc, bm.binding.AllowFailure)
		},
	}
}

// syncContext is the Synchronization binding context of one binding, or
// the Group context of its group. Taking it turns the binding live.
func syncContext(hm *hookMonitors, bm *bindingMonitor, group []*bindingMonitor) (string, []map[string]any) {
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

// OrderedContext is the binding context of an ordered binding
// (docs/lifecycle.md, steps 3, 5, 6 and 8). As in the original, every
// ordered binding but onStartup of a v1 hook carries the snapshots of all
// the hook's kubernetes bindings ({} when it has none); a v0 hook gets them
// when it has kubernetes bindings.
func (bs *Bindings) OrderedContext(h *loader.Hook, binding string) []map[string]any {
	c := map[string]any{"binding": binding}
	if binding != loader.OnStartup && (!isV0(h) || len(h.Config.Kubernetes) > 0) {
		names := make([]string, 0, len(h.Config.Kubernetes))
		for _, k := range h.Config.Kubernetes {
			names = append(names, k.Name)
		}
		c["snapshots"] = (&snapshotter{hm: bs.kube.get(h.Key())}).from(names)
	}
	return []map[string]any{c}
}

// queueKubeEvent queues an Event run in the binding's queue.
func (bs *Bindings) queueKubeEvent(h *loader.Hook, bm *bindingMonitor, ev kube.ObjectEvent) {
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
	q.Add(bs.hookRunTask(h, taskkind.KubeEvent, b.Queue, b.AllowFailure, a))
}

// GlobalSyncTask is step 2: the global hooks' monitors and Synchronization.
// 'reload all modules' repeats it, which starts the monitors of global
// hooks that a new tree added or changed.
func (bs *Bindings) GlobalSyncTask() *queue.Task {
	return &queue.Task{
		Key:         queue.Key{Kind: taskkind.KubeSync},
		Description: "global hooks: kubernetes Synchronization",
		Do: func(ctx context.Context) error {
			model, _ := bs.trees.Current()
			return bs.Synchronize(ctx, model.Global.Hooks)
		},
	}
}
