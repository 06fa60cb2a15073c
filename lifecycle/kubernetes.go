package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// Task kinds of kubernetes bindings.
const (
	kindKubeSync  = "KubernetesSynchronization"
	kindKubeEvent = "KubernetesEvent"
)

// Binding context types (configVersion v1; docs/operator.md, "Kubernetes bindings").
const (
	typeSynchronization = "Synchronization"
	typeEvent           = "Event"
	typeGroup           = "Group"
)

// Watcher starts the monitors behind kubernetes bindings.
type Watcher interface {
	NewMonitor(spec kube.MonitorSpec, handler func(kube.ObjectEvent)) (*kube.Monitor, error)
}

var _ Watcher = (*kube.Watcher)(nil)

// errNoWatcher: a hook has kubernetes bindings, and the operator was built
// without access to the API server's watches.
var errNoWatcher = errors.New("kubernetes bindings need a watcher, and none is configured")

// hookMonitors are the running monitors of one hook's kubernetes bindings.
type hookMonitors struct {
	hook     *loader.Hook
	bindings []*bindingMonitor // in the hook's binding order
}

type bindingMonitor struct {
	binding loader.KubernetesBinding
	monitor *kube.Monitor
	// live: events are queued. It turns on when the hook's Synchronization
	// context is taken, so every later change reaches the hook as an event
	// and every earlier one is in the objects it saw.
	live atomic.Bool
	// synced: the Synchronization run is done (or queued in its own queue).
	synced bool
}

// kubeMonitors are the operator's running monitors, by hook.
type kubeMonitors struct {
	mu    sync.Mutex
	hooks map[string]*hookMonitors // by hookID
}

func hookID(h *loader.Hook) string {
	return h.Module + "\x00" + h.Name + "\x00" + h.Hash
}

// monitorSpec turns a binding into what the monitor watches.
func monitorSpec(b loader.KubernetesBinding) kube.MonitorSpec {
	var fields []string
	for _, r := range b.FieldSelector {
		op := "="
		if r.Operator == "!=" || r.Operator == "NotEquals" {
			op = "!="
		}
		fields = append(fields, r.Field+op+r.Value)
	}
	return kube.MonitorSpec{
		APIVersion: b.APIVersion, Kind: b.Kind, Namespaces: b.Namespaces, NamespaceLabelSelector: b.NamespaceLabelSelector,
		LabelSelector: b.LabelSelector, FieldSelector: strings.Join(fields, ","), Names: b.NameSelector,
		Events: b.ExecuteHookOnEvent, JqFilter: b.Query, KeepFullObjects: b.KeepFullObjectsInMemory,
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
func (o *Operator) ensureMonitors(h *loader.Hook) (*hookMonitors, error) {
	id := hookID(h)
	o.kube.mu.Lock()
	hm := o.kube.hooks[id]
	o.kube.mu.Unlock()
	if hm != nil {
		return hm, nil
	}
	if o.cfg.Watcher == nil {
		return nil, fmt.Errorf("hook %s: %w", h.Name, errNoWatcher)
	}
	hm = &hookMonitors{hook: h}
	for _, b := range h.Config.Kubernetes {
		bm := &bindingMonitor{binding: b}
		m, err := o.cfg.Watcher.NewMonitor(monitorSpec(b), func(ev kube.ObjectEvent) {
			if bm.live.Load() {
				o.queueKubeEvent(h, bm, ev)
			}
		})
		if err == nil {
			bm.monitor = m
			err = m.Start(o.runCtx)
		}
		if err != nil {
			stopAll(hm)
			return nil, fmt.Errorf("hook %s: binding %s: %w", h.Name, b.Name, err)
		}
		hm.bindings = append(hm.bindings, bm)
	}
	o.kube.mu.Lock()
	o.kube.hooks[id] = hm
	o.kube.mu.Unlock()
	o.logger.Info("watching for hook", "hook", h.Name, "module", h.Module, "bindings", len(hm.bindings))
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
func (o *Operator) synchronize(ctx context.Context, hooks []*loader.Hook) error {
	for _, h := range withKubernetes(hooks) {
		hm, err := o.ensureMonitors(h)
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
				markSynced(group, bm)
				o.Queues().Queue(b.Queue).Add(o.kubeSyncTask(h, hm, bm, group))
				continue
			}
			name, bc := o.syncContext(hm, bm, group)
			if _, err := o.runHook(ctx, h, name, bc, false); err != nil {
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
func (o *Operator) kubeSyncTask(h *loader.Hook, hm *hookMonitors, bm *bindingMonitor, group []*bindingMonitor) *queue.Task {
	return &queue.Task{
		Kind:         kindKubeSync,
		Description:  h.Name + ": " + bm.binding.Name,
		AllowFailure: bm.binding.AllowFailure,
		Do: func(ctx context.Context) error {
			name, bc := o.syncContext(hm, bm, group)
			return o.runEventHook(ctx, h, name, bc, bm.binding.AllowFailure)
		},
	}
}

// syncContext is the Synchronization binding context of one binding, or
// the Group context of its group. Taking it turns the binding live.
func (o *Operator) syncContext(hm *hookMonitors, bm *bindingMonitor, group []*bindingMonitor) (string, []map[string]any) {
	for _, x := range append(group, bm) {
		x.live.Store(true)
	}
	if len(group) > 0 {
		return bm.binding.Group, groupContext(hm, bm.binding.Group)
	}
	b := bm.binding
	var objects []map[string]any
	for _, ev := range bm.monitor.Snapshot() {
		objects = append(objects, snapshotItem(b, ev))
	}
	if objects == nil {
		objects = []map[string]any{}
	}
	c := map[string]any{"binding": b.Name, "type": typeSynchronization, "objects": objects}
	if s := o.includedSnapshots(hm, b.IncludeSnapshotsFrom); s != nil {
		c["snapshots"] = s
	}
	return b.Name, []map[string]any{c}
}

// groupContext is the binding context of a group (kubernetes and schedule
// bindings alike): the snapshots of the group's kubernetes bindings.
func groupContext(hm *hookMonitors, group string) []map[string]any {
	return []map[string]any{{"binding": group, "type": typeGroup, "snapshots": snapshotsOf(groupOf(hm, group))}}
}

// snapshotItem is one object as hooks see it: the object (unless only
// filter results are kept) and the filter result (with a jqFilter).
func snapshotItem(b loader.KubernetesBinding, ev kube.ObjectEvent) map[string]any {
	item := map[string]any{}
	if ev.Object != nil {
		item["object"] = ev.Object
	}
	if b.Query != nil {
		item["filterResult"] = ev.FilterResult
	}
	return item
}

func snapshotsOf(bms []*bindingMonitor) map[string]any {
	out := map[string]any{}
	for _, bm := range bms {
		items := []map[string]any{}
		for _, ev := range bm.monitor.Snapshot() {
			items = append(items, snapshotItem(bm.binding, ev))
		}
		out[bm.binding.Name] = items
	}
	return out
}

// includedSnapshots are the snapshots of the named bindings (nil for none).
func (o *Operator) includedSnapshots(hm *hookMonitors, names []string) map[string]any {
	if hm == nil || len(names) == 0 {
		return nil
	}
	var bms []*bindingMonitor
	for _, bm := range hm.bindings {
		if slices.Contains(names, bm.binding.Name) {
			bms = append(bms, bm)
		}
	}
	return snapshotsOf(bms)
}

// runningMonitors returns the monitors of the hook (nil when none run).
func (o *Operator) runningMonitors(h *loader.Hook) *hookMonitors {
	o.kube.mu.Lock()
	defer o.kube.mu.Unlock()
	return o.kube.hooks[hookID(h)]
}

// orderedContext is the binding context of an ordered binding: with the
// snapshots of all the hook's kubernetes bindings when it has any
// (docs/lifecycle.md, steps 3, 5, 6 and 8).
func (o *Operator) orderedContext(h *loader.Hook, binding string) []map[string]any {
	c := map[string]any{"binding": binding}
	if hm := o.runningMonitors(h); hm != nil && binding != loader.OnStartup {
		c["snapshots"] = snapshotsOf(hm.bindings)
	}
	return []map[string]any{c}
}

// queueKubeEvent queues an Event run in the binding's queue. A run of the
// same hook and binding still waiting at the queue's tail takes the event
// in, so a burst becomes one run whose binding context holds every event.
func (o *Operator) queueKubeEvent(h *loader.Hook, bm *bindingMonitor, ev kube.ObjectEvent) {
	queues := o.Queues()
	if queues == nil {
		return
	}
	b := bm.binding
	name := b.Name
	if b.Group != "" {
		name = b.Group
	}
	o.metrics.kubeEvents.WithLabelValues(h.Name, b.Name).Inc()
	events := []kube.ObjectEvent{ev}
	queues.Queue(b.Queue).Add(&queue.Task{
		Kind:         kindKubeEvent,
		Description:  h.Name + ": " + name,
		AllowFailure: b.AllowFailure,
		MergeKey:     kindKubeEvent + "/" + hookID(h) + "/" + name,
		Merge: func(later *queue.Task) {
			events = append(events, later.Payload.([]kube.ObjectEvent)...)
		},
		Payload: events,
		Do: func(ctx context.Context) error {
			return o.runEventHook(ctx, h, name, o.eventContexts(h, bm, events), b.AllowFailure)
		},
	})
}

// eventContexts builds the Event binding contexts of a run at run time, so
// snapshots are current. A group binding gets one Group context.
func (o *Operator) eventContexts(h *loader.Hook, bm *bindingMonitor, events []kube.ObjectEvent) []map[string]any {
	hm := o.runningMonitors(h)
	b := bm.binding
	if b.Group != "" {
		return groupContext(hm, b.Group)
	}
	snapshots := o.includedSnapshots(hm, b.IncludeSnapshotsFrom)
	out := make([]map[string]any, 0, len(events))
	for _, ev := range events {
		c := map[string]any{"binding": b.Name, "type": typeEvent, "watchEvent": ev.Type, "object": ev.Object}
		if b.Query != nil {
			c["filterResult"] = ev.FilterResult
		}
		if snapshots != nil {
			c["snapshots"] = snapshots
		}
		if b.V0 {
			c["resourceEvent"] = v0Event[ev.Type]
			c["resourceNamespace"] = ev.Namespace
			c["resourceKind"] = bm.monitor.Kind()
			c["resourceName"] = ev.Name
		}
		out = append(out, c)
	}
	return out
}

var v0Event = map[string]string{kube.Added: "add", kube.Modified: "update", kube.Deleted: "delete"}

// syncMonitors stops the monitors of hooks that are gone from the tree,
// changed, or whose module is not enabled any more.
func (o *Operator) syncMonitors() {
	model, _ := o.current()
	want := map[string]bool{}
	for _, h := range model.Global.Hooks {
		want[hookID(h)] = true
	}
	o.mu.Lock()
	for _, m := range model.Modules {
		if st := o.modules[m.Name]; st != nil && st.enabled {
			for _, h := range m.Hooks {
				want[hookID(h)] = true
			}
		}
	}
	o.mu.Unlock()
	o.kube.mu.Lock()
	var stop []*hookMonitors
	for id, hm := range o.kube.hooks {
		if !want[id] {
			stop = append(stop, hm)
			delete(o.kube.hooks, id)
		}
	}
	o.kube.mu.Unlock()
	for _, hm := range stop {
		stopAll(hm)
		o.logger.Info("stopped watching for hook", "hook", hm.hook.Name, "module", hm.hook.Module)
	}
}

// watchStatus lists the running monitors, by module, hook and binding.
func (o *Operator) watchStatus() []WatchStatus {
	o.kube.mu.Lock()
	out := []WatchStatus{}
	for _, hm := range o.kube.hooks {
		for _, bm := range hm.bindings {
			out = append(out, WatchStatus{
				Hook: hm.hook.Name, Module: hm.hook.Module, Binding: bm.binding.Name, Kind: bm.monitor.Kind(),
				Objects: bm.monitor.Len(), LastError: bm.monitor.LastError(),
			})
		}
	}
	o.kube.mu.Unlock()
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
func (o *Operator) stopMonitors() {
	o.kube.mu.Lock()
	hooks := o.kube.hooks
	o.kube.hooks = map[string]*hookMonitors{}
	o.kube.mu.Unlock()
	for _, hm := range hooks {
		stopAll(hm)
	}
}

// globalSyncTask is step 2: the global hooks' monitors and Synchronization.
// 'reload all modules' repeats it, which starts the monitors of global
// hooks that a new tree added or changed.
func (o *Operator) globalSyncTask() *queue.Task {
	return &queue.Task{
		Kind:        kindKubeSync,
		Description: "global hooks: kubernetes Synchronization",
		Do: func(ctx context.Context) error {
			model, _ := o.current()
			return o.synchronize(ctx, model.Global.Hooks)
		},
	}
}
