package binding

import (
	"slices"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
)

// The binding contexts hooks get (docs/operator.md, "Hook configs and
// binding contexts"), made from the bindings' snapshots.

// Binding context types (configVersion v1; docs/operator.md, "Kubernetes bindings").
const (
	typeSynchronization = "Synchronization"
	typeEvent           = "Event"
	typeGroup           = "Group"
	typeSchedule        = "Schedule"
)

// groupContext is the binding context of a binding in a group (kubernetes
// and schedule alike): the snapshots of the group's kubernetes bindings and
// of those the binding names in includeSnapshotsFrom.
func groupContext(h *loader.Hook, binding, group string, include []string, s *snapshotter) map[string]any {
	names := slices.Clone(include)
	for _, k := range h.Config.Kubernetes {
		if k.Group == group && !slices.Contains(names, k.Name) {
			names = append(names, k.Name)
		}
	}
	return map[string]any{"binding": binding, "type": typeGroup, "groupName": group, "snapshots": s.from(names)}
}

// snapshotItem is one object as hooks see it: the object (unless the
// binding keeps no full objects) and the filter result (with a jqFilter).
func snapshotItem(b loader.KubernetesBinding, ev kube.ObjectEvent) map[string]any {
	item := map[string]any{}
	if b.KeepFullObjectsInMemory {
		item["object"] = ev.Object
	}
	if b.Query != nil {
		item["filterResult"] = ev.FilterResult
	}
	return item
}

// snapshotter reads each binding's snapshot once per hook run, so every
// binding context of a run shows the same objects.
type snapshotter struct {
	hm    *hookMonitors // nil: no monitor runs, every snapshot is empty
	cache map[string][]map[string]any
}

// of is the snapshot of the named binding ([] when its monitor is not running).
func (s *snapshotter) of(name string) []map[string]any {
	if items, ok := s.cache[name]; ok {
		return items
	}
	items := []map[string]any{}
	if s.hm != nil {
		for _, bm := range s.hm.bindings {
			if bm.binding.Name == name {
				for _, ev := range bm.monitor.Snapshot() {
					items = append(items, snapshotItem(bm.binding, ev))
				}
			}
		}
	}
	if s.cache == nil {
		s.cache = map[string][]map[string]any{}
	}
	s.cache[name] = items
	return items
}

// from is the snapshots of the named bindings, by name.
func (s *snapshotter) from(names []string) map[string]any {
	out := make(map[string]any, len(names))
	for _, n := range names {
		out[n] = s.of(n)
	}
	return out
}

// eventContext is the Event binding context of one watch event.
func eventContext(b loader.KubernetesBinding, kind string, ev kube.ObjectEvent, s *snapshotter) map[string]any {
	c := map[string]any{"binding": b.Name, "type": typeEvent, "watchEvent": ev.Type}
	if b.KeepFullObjectsInMemory {
		c["object"] = ev.Object
	}
	if b.Query != nil {
		c["filterResult"] = ev.FilterResult
	}
	if len(b.IncludeSnapshotsFrom) > 0 {
		c["snapshots"] = s.from(b.IncludeSnapshotsFrom)
	}
	if b.V0 {
		c["resourceEvent"] = v0Event[ev.Type]
		c["resourceNamespace"] = ev.Namespace
		c["resourceKind"] = kind
		c["resourceName"] = ev.Name
	}
	return c
}

var v0Event = map[string]string{loader.EventAdded: "add", loader.EventModified: "update", loader.EventDeleted: "delete"}

func isV0(h *loader.Hook) bool { return h.Config.Version == "v0" }

// Snapshots are the snapshots of h's named kubernetes bindings, by name,
// as a run of h would see them now (the webhook runs' snapshots).
func (bs *Bindings) Snapshots(h *loader.Hook, names []string) map[string]any {
	return (&snapshotter{hm: bs.kube.get(h.Key())}).from(names)
}
