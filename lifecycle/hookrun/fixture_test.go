package hookrun

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/addonops/addon-operator/internal/testtree"
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/objectpatch"
)

// fakeConfig is the values ConfigMap in memory (ConfigWriter).
type fakeConfig struct {
	mu      sync.Mutex
	data    map[string]string
	version int
	updates int
}

var _ ConfigWriter = (*fakeConfig)(nil)

func (c *fakeConfig) Update(_ context.Context, fn func(map[string]string) (map[string]string, error)) (map[string]string, string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next, err := fn(maps.Clone(c.data))
	if err != nil {
		return nil, "", err
	}
	c.data, c.version = next, c.version+1
	c.updates++
	return maps.Clone(next), strconv.Itoa(c.version), nil
}

func (c *fakeConfig) get() (map[string]string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.data), c.updates
}

// fakePatcher records the object operations it is handed (ObjectPatcher).
type fakePatcher struct {
	mu  sync.Mutex
	ops []objectpatch.Op
	err error
}

var _ ObjectPatcher = (*fakePatcher)(nil)

func (p *fakePatcher) Apply(_ context.Context, ops []objectpatch.Op) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ops = append(p.ops, ops...)
	return p.err
}

func (p *fakePatcher) applied() []objectpatch.Op {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ops
}

// hookScript is a shell hook bound to beforeHelm (a module's) or
// beforeAll (a global one) that runs body.
func hookScript(binding, body string) string {
	return "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"configVersion\":\"v1\",\"" + binding + "\":1}'; exit 0; fi\n" + body + "\n"
}

// baseTree is a module alpha (key alpha) and global values; more adds
// files, such as hooks.
func baseTree(more map[string]string) map[string]string {
	files := map[string]string{
		"modules/values.yaml":           "global: {g: 1}\nalphaEnabled: true\nalpha: {a: 1}\n",
		"modules/001-alpha/Chart.yaml":  "apiVersion: v2\nname: alpha\nversion: 0.1.0\n",
		"global-hooks/.keep":            "",
		"modules/001-alpha/hooks/.keep": "",
	}
	maps.Copy(files, more)
	return files
}

// fixture is a Runner over a loaded tree, with its ConfigMap, object
// patcher and metrics in memory.
type fixture struct {
	dir     string
	tmp     string // the runner's TempDir
	model   *loader.Model
	r       *Runner
	trees   *runstate.Trees
	modules *runstate.Modules
	config  *fakeConfig
	patcher *fakePatcher
	metrics *metrics.Recorder
}

func newFixture(t *testing.T, files map[string]string, opts ...func(*Options)) *fixture {
	t.Helper()
	dir := testtree.New(t, files)
	ld := loader.New(loader.WithLogger(quiet()))
	model, err := ld.Load(t.Context(), dir, filepath.Join(dir, "modules"), filepath.Join(dir, "global-hooks"))
	if err != nil {
		t.Fatal(err)
	}
	config := &fakeConfig{data: map[string]string{}, version: 1}
	store, err := runstate.Admit(model, config.data, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{dir: dir, tmp: t.TempDir(), model: model, trees: &runstate.Trees{}, modules: runstate.NewModules(), config: config, patcher: &fakePatcher{},
		metrics: metrics.New(prometheus.NewRegistry(), func() (string, string) { return "", "" })}
	f.trees.Start(&runstate.Tree{Model: model, Store: store, ConfigData: config.data, ConfigVersion: "1"})
	f.modules.Reset(model)
	f.modules.Edit(func(_ map[string]*runstate.Module, enabled *[]string) { *enabled = []string{"alpha"} })
	o := Options{Logger: quiet(), TempDir: f.tmp, ObjectPatcher: f.patcher, Config: config, Metrics: f.metrics, Trees: f.trees, Modules: f.modules}
	for _, fn := range opts {
		fn(&o)
	}
	f.r = New(o)
	return f
}

// hook is the model's hook of that name (global or a module's).
func (f *fixture) hook(t *testing.T, name string) *loader.Hook {
	t.Helper()
	hooks := append([]*loader.Hook{}, f.model.Global.Hooks...)
	for _, m := range f.model.Modules {
		hooks = append(hooks, m.Hooks...)
	}
	for _, h := range hooks {
		if h.Name == name {
			return h
		}
	}
	t.Fatalf("no hook %s in the tree", name)
	return nil
}

// leftovers are the files runs left in the runner's TempDir.
func (f *fixture) leftovers(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(f.tmp)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// errText is err's message ("" for nil).
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

var errAPI = errors.New("configmaps \"x\" is forbidden: user cannot patch; data: password=hunter2")
