package binding

import "sync"

// kubeMonitors are the running monitors, by hook (loader.Hook.Key).
type kubeMonitors struct {
	mu    sync.Mutex
	hooks map[string]*hookMonitors
}

// get is a hook's running monitors (nil when none run).
func (k *kubeMonitors) get(key string) *hookMonitors {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.hooks[key]
}

func (k *kubeMonitors) add(key string, hm *hookMonitors) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.hooks[key] = hm
}

// list is every hook's running monitors, read after the lock is released.
func (k *kubeMonitors) list() []*hookMonitors {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]*hookMonitors, 0, len(k.hooks))
	for _, hm := range k.hooks {
		out = append(out, hm)
	}
	return out
}

// retain drops the hooks that want, called under the lock, leaves out,
// and returns them for the caller to stop.
func (k *kubeMonitors) retain(want func() map[string]bool) []*hookMonitors {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.hooks) == 0 {
		// nothing to stop: want walks every hook of the tree, on every
		// change of a module's state (docs/performance.md)
		return nil
	}
	keep := want()
	var out []*hookMonitors
	for key, hm := range k.hooks {
		if !keep[key] {
			out = append(out, hm)
			delete(k.hooks, key)
		}
	}
	return out
}

// removeAll drops every hook (the operator is stopping) and returns them.
func (k *kubeMonitors) removeAll() []*hookMonitors {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]*hookMonitors, 0, len(k.hooks))
	for _, hm := range k.hooks {
		out = append(out, hm)
	}
	k.hooks = map[string]*hookMonitors{}
	return out
}
