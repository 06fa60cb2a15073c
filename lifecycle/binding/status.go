package binding

import "sort"

// WatchStatus is one kubernetes binding's monitor in /status.
type WatchStatus struct {
	Hook    string `json:"hook"`
	Module  string `json:"module,omitempty"`
	Binding string `json:"binding"`
	Kind    string `json:"kind"`
	// Objects is how many objects the binding sees now.
	Objects int `json:"objects"`
	// LastError is the last list or watch error (retried with backoff).
	LastError string `json:"lastError,omitempty"`
}

// WatchStatus lists the running monitors, by module, hook and binding. It
// reads the monitors after the list's lock is released: a hook run needs
// that lock, and a monitor's count waits on its watch (docs/operator.md).
func (bs *Bindings) WatchStatus() []WatchStatus {
	hooks := bs.kube.list()
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
