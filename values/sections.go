package values

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Sections reads a ConfigMap's keys and selects the module sections that
// are validated when a ConfigMap is set (docs/operator.md, "Values"): a
// Store holds one (Store.Sections), and a module's settings check runs
// for the same sections (lifecycle's settingscheck.go). It is safe for
// concurrent use.
type Sections struct {
	layout *layout // the store's (read only)

	mu sync.RWMutex
	// active are the module keys whose sections are validated whatever
	// the ConfigMap's flags say (SetActive).
	active map[string]bool
}

// SetActive sets the modules whose sections every ConfigMap is validated
// against from now on: the modules the last discovery enabled, by key.
// Keys of modules the tree does not have are ignored.
func (c *Sections) SetActive(keys []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active = map[string]bool{}
	for _, k := range keys {
		if _, ok := c.layout.modules[k]; ok {
			c.active[k] = true
		}
	}
}

// Active lists the keys SetActive set, in tree order.
func (c *Sections) Active() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	for _, k := range c.layout.order {
		if c.active[k] {
			out = append(out, k)
		}
	}
	return out
}

// Checked lists the keys of the modules whose sections a ConfigMap with
// this data has validated when it is set, in tree order. Data that does
// not parse lists none: setting it is refused anyway, in its own words.
func (c *Sections) Checked(data map[string]string) []string {
	cfg, err := c.parse(data)
	if err != nil {
		return nil
	}
	return slices.DeleteFunc(slices.Clone(c.layout.order), func(k string) bool { return !c.checked(cfg, k) })
}

// checked says whether a ConfigMap's module section is validated when
// the ConfigMap is set: the section of a module that is enabled, as far as
// is known before discovery: one the last discovery enabled (SetActive),
// one the values files and the ConfigMap enable that has no enabled
// script, and one the ConfigMap itself enables with its *Enabled flag, as
// the original addon-operator does. A module an enabled script or a global
// hook's flag enables has its section checked by discovery
// (Store.CheckModuleConfig), so a disabled module's section never refuses
// a ConfigMap or a tree. The hooks' flags are left out so that lifecycle's
// admit, which judges a store without them, and the running store agree.
func (c *Sections) checked(cfg level, key string) bool {
	c.mu.RLock()
	active := c.active[key]
	c.mu.RUnlock()
	return active || (cfg.flags[key] && !cfg.disabled[key]) ||
		(!c.layout.modules[key].scripted && c.layout.filesEnable(cfg, key))
}

// parse parses a ConfigMap's data: `global`, module sections and
// *Enabled flags, each a YAML string. Errors name the key.
func (c *Sections) parse(data map[string]string) (level, error) {
	l := newLevel()
	var errs []error
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := parseSection("ConfigMap key "+k, data[k])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		switch {
		case k == GlobalKey:
			if _, ok := asMap(v); !ok {
				errs = append(errs, fmt.Errorf("ConfigMap key global: want a map, got %s", kindOf(v)))
				continue
			}
			if v != nil {
				l.sections[k] = v
			}
		case c.layout.isFlag(k):
			b, err := flagValue(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("ConfigMap key %s: %w", k, err))
				continue
			}
			l.flags[strings.TrimSuffix(k, EnabledSuffix)] = b
		case isFalse(v):
			l.disabled[k] = true
		case v != nil:
			l.sections[k] = v
		}
	}
	return l, errors.Join(errs...)
}
