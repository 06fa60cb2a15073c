package loader

import (
	"maps"
	"sync"
)

// configCache holds hook configs by configKey (module, name in the tree,
// the hook's content hash and the hash of the directory its --config may
// read), so a new checkout of a tree reuses the configs of its unchanged
// hooks. It keeps only what recent loads used: the last load
// that succeeded (its tree is the one running), the last load that
// finished (a candidate, which may have failed and be fixed next) and the
// loads still in flight. Configs of hooks no longer in any of those trees
// go, so a stream of changing trees does not grow the cache for ever.
type configCache struct {
	mu      sync.Mutex
	entries map[string]cachedConfig
	lastOK  map[string]cachedConfig
	last    map[string]cachedConfig
	running map[*cacheUse]bool
	runs    int
}

// cachedConfig is a hook's parsed config and the hash of the --config
// output it came from; for an executable asked `hook config`, what that
// found instead of cfg (batch.go).
type cachedConfig struct {
	cfg   *HookConfig
	hash  string
	batch *batchProbe
}

// cacheUse is what one load took from the cache or added to it.
type cacheUse struct {
	used map[string]cachedConfig // guarded by configCache.mu
}

func newConfigCache() *configCache {
	return &configCache{entries: map[string]cachedConfig{}, running: map[*cacheUse]bool{}}
}

// begin starts a load's use of the cache.
func (c *configCache) begin() *cacheUse {
	u := &cacheUse{used: map[string]cachedConfig{}}
	c.mu.Lock()
	c.running[u] = true
	c.mu.Unlock()
	return u
}

// get returns the cached config; a miss counts as a --config run.
func (c *configCache) get(u *cacheUse, key string) (cachedConfig, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cfg, ok := c.entries[key]
	if ok {
		u.used[key] = cfg
	} else {
		c.runs++
	}
	return cfg, ok
}

func (c *configCache) put(u *cacheUse, key string, cfg cachedConfig) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[key] = cfg
	u.used[key] = cfg
}

// end finishes a load's use and prunes the cache to what the last
// successful load, the last load and the loads in flight used.
func (c *configCache) end(u *cacheUse, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.running, u)
	c.last = u.used
	if ok {
		c.lastOK = u.used
	}
	kept := make(map[string]cachedConfig, len(c.lastOK)+len(c.last))
	maps.Copy(kept, c.lastOK)
	maps.Copy(kept, c.last)
	for r := range c.running {
		maps.Copy(kept, r.used)
	}
	c.entries = kept
}

func (c *configCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

func (c *configCache) runCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs
}
