package modulestatus

import (
	"context"
	"errors"
	"sort"
	"sync"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
)

// fakeClient records what a Writer writes.
type fakeClient struct {
	mu      sync.Mutex
	objects map[string]Status
	writes  map[string]int
	deletes []string
	failing error // every Write fails with it
}

var _ Client = (*fakeClient)(nil)

func newFakeClient(existing ...string) *fakeClient {
	c := &fakeClient{objects: map[string]Status{}, writes: map[string]int{}}
	for _, n := range existing {
		c.objects[n] = Status{}
	}
	return c
}

func (c *fakeClient) List(context.Context) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var names []string
	for n := range c.objects {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

func (c *fakeClient) Write(_ context.Context, name string, st *Status) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failing != nil {
		return c.failing
	}
	st.observe(1)
	c.objects[name] = *st
	c.writes[name]++
	return nil
}

func (c *fakeClient) Delete(_ context.Context, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.objects, name)
	c.deletes = append(c.deletes, name)
	return nil
}

func (c *fakeClient) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, w := range c.writes {
		n += w
	}
	return n
}

func (c *fakeClient) get(name string) (Status, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.objects[name]
	return st, ok
}

var errWrite = errors.New("write refused")

// fakeHealth and fakeDrift are settable per module.
type fakeHealth struct {
	mu sync.Mutex
	m  map[string]health.ModuleHealth
}

func (f *fakeHealth) Module(name string) (health.ModuleHealth, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, ok := f.m[name]
	return h, ok
}

func (f *fakeHealth) set(name string, h health.ModuleHealth) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]health.ModuleHealth{}
	}
	f.m[name] = h
}

type fakeDrift map[string]int

func (f fakeDrift) Drifted(name string) int { return f[name] }

// tree is a running tree of the named modules, in order.
func tree(commit string, names ...string) *runstate.Tree {
	m := &loader.Model{}
	for i, n := range names {
		m.Modules = append(m.Modules, &loader.Module{Name: n, Order: (i + 1) * 10})
	}
	return &runstate.Tree{Model: m, Rev: gitsync.Revision{Ref: "refs/heads/main", Commit: commit}}
}

// setState sets the modules' states (added when new).
func setState(r *runstate.Modules, states map[string]runstate.Module) {
	r.Edit(func(mods map[string]*runstate.Module, enabled *[]string) {
		for n, st := range states {
			st := st
			mods[n] = &st
			if st.Enabled {
				*enabled = append(*enabled, n)
			}
		}
	})
}
