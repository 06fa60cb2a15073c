package loader

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// countingHook prints config for --config and appends a line to runs
// each time, so the test counts --config runs as a hook sees them. rev
// only changes the hook's content.
func countingHook(runs, config, rev string) string {
	return fmt.Sprintf("#!/bin/sh\n# revision %s\nif [ \"$1\" = --config ]; then\n  echo x >> '%s'\n  echo '%s'\nfi\n", rev, runs, config)
}

// writeCountingTree writes a tree of three counting hooks: a global one
// and one per module; only module one's hook changes with rev.
func writeCountingTree(t *testing.T, tree, runs, rev string) {
	t.Helper()
	writeFile(t, filepath.Join(tree, "global-hooks/g.sh"), countingHook(runs, `{"onStartup": 1}`, "fixed"), 0o755)
	writeFile(t, filepath.Join(tree, "modules/001-one/hooks/h.sh"), countingHook(runs, `{"beforeHelm": 1}`, rev), 0o755)
	writeFile(t, filepath.Join(tree, "modules/002-two/hooks/h.sh"), countingHook(runs, `{"beforeHelm": 2}`, "fixed"), 0o755)
}

const countingTreeHooks = 3

func countRuns(t *testing.T, runs string) int {
	t.Helper()
	b, err := os.ReadFile(runs)
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// TestHookConfigCachePruned: loads of ever-changing trees keep the cache
// to the hooks of the last trees, and unchanged hooks still run --config
// only once.
func TestHookConfigCachePruned(t *testing.T) {
	base := t.TempDir()
	runs := filepath.Join(base, "runs")
	l := New(WithLogger(quietLogger()))
	const loads = 30
	for i := range loads {
		// each revision in a checkout of its own, as the git syncer does
		tree := filepath.Join(base, fmt.Sprint("rev", i))
		writeCountingTree(t, tree, runs, fmt.Sprint(i))
		if _, err := load(t, l, tree); err != nil {
			t.Fatal(err)
		}
		if n := l.configs.len(); n > 2*countingTreeHooks {
			t.Fatalf("after %d loads the cache holds %d configs, want at most %d", i+1, n, 2*countingTreeHooks)
		}
	}
	// the first load runs every hook, each later one the changed hook only
	if got, want := countRuns(t, runs), countingTreeHooks+loads-1; got != want {
		t.Fatalf("--config runs = %d, want %d", got, want)
	}
	before := countRuns(t, runs)
	if _, err := load(t, l, filepath.Join(base, fmt.Sprint("rev", loads-1))); err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(base, "same-content")
	writeCountingTree(t, again, runs, fmt.Sprint(loads-1))
	if _, err := load(t, l, again); err != nil {
		t.Fatal(err)
	}
	if got := countRuns(t, runs); got != before || l.configs.runCount() != before {
		t.Fatalf("reloads of an unchanged tree ran --config: %d runs (loader counts %d), want %d", got, l.configs.runCount(), before)
	}
}

// TestHookConfigCacheKeepsRunningTree: a burst of trees that fail to load
// does not push out the configs of the last tree that loaded, which is
// the one still running.
func TestHookConfigCacheKeepsRunningTree(t *testing.T) {
	base := t.TempDir()
	runs := filepath.Join(base, "runs")
	l := New(WithLogger(quietLogger()))
	good := filepath.Join(base, "good")
	writeCountingTree(t, good, runs, "good")
	if _, err := load(t, l, good); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		bad := filepath.Join(base, fmt.Sprint("bad", i))
		writeCountingTree(t, bad, runs, fmt.Sprint("bad", i))
		writeFile(t, filepath.Join(bad, "modules/002-two/hooks/h.sh"), countingHook(runs, `{"afterAll": 1}`, fmt.Sprint(i)), 0o755)
		if _, err := load(t, l, bad); err == nil {
			t.Fatal("a tree with a bad hook config loaded")
		}
	}
	before := countRuns(t, runs)
	if _, err := load(t, l, good); err != nil {
		t.Fatal(err)
	}
	if got := countRuns(t, runs); got != before {
		t.Fatalf("the running tree's hooks ran --config again: %d runs, want %d", got, before)
	}
}

// TestHookConfigOutputBound: a config larger than the executor's default
// output bound loads whole; one over the loader's bound is refused, not
// truncated.
func TestHookConfigOutputBound(t *testing.T) {
	tests := []struct {
		name    string
		padding int
		wantErr string
	}{
		{name: "200 KiB", padding: 200 << 10},
		{name: "just under the limit", padding: DefaultMaxConfigOutput - 64},
		{name: "2 MiB", padding: 2 << 20, wantErr: "over the limit"},
	}
	l := New(WithLogger(quietLogger()))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := t.TempDir()
			script := fmt.Sprintf("#!/bin/sh\nprintf '{\"onStartup\": 1,'\nhead -c %d /dev/zero | tr '\\0' ' '\nprintf '\"beforeHelm\": 2}\\n'\n", tt.padding)
			writeFile(t, filepath.Join(tree, "modules/001-one/hooks/h.sh"), script, 0o755)
			m, err := load(t, l, tree)
			if tt.wantErr != "" {
				hook := filepath.Join(tree, "modules/001-one/hooks/h.sh")
				if err == nil || !strings.Contains(err.Error(), hook) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to name %s and say %q", err, hook, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o, ok := m.Modules[0].Hooks[0].Config.Order(BeforeHelm); !ok || o != 2 {
				t.Fatalf("config = %+v", m.Modules[0].Hooks[0].Config)
			}
		})
	}
}

// TestWithoutHookConfigs: a loader told not to run --config runs nothing
// from the tree and leaves every config nil.
func TestWithoutHookConfigs(t *testing.T) {
	base := t.TempDir()
	runs := filepath.Join(base, "runs")
	tree := filepath.Join(base, "tree")
	writeCountingTree(t, tree, runs, "a")
	l := New(WithLogger(quietLogger()), WithHookConfigs(false))
	m, err := load(t, l, tree)
	if err != nil {
		t.Fatal(err)
	}
	if n := countRuns(t, runs); n != 0 || l.configs.runCount() != 0 || l.configs.len() != 0 {
		t.Fatalf("--config ran %d times (loader counts %d)", n, l.configs.runCount())
	}
	if len(m.Global.Hooks) != 1 || m.Global.Hooks[0].Config != nil || len(m.Modules) != 2 {
		t.Fatalf("model = %+v", m)
	}
}

// TestConfigCacheInFlight: a load that ends keeps what loads still in
// flight added, and the cache ends up with the last loads' configs only.
func TestConfigCacheInFlight(t *testing.T) {
	c := newConfigCache()
	first, second := c.begin(), c.begin()
	c.put(first, "a", cachedConfig{cfg: &HookConfig{}})
	c.put(second, "b", cachedConfig{cfg: &HookConfig{}})
	c.end(first, true)
	probe := c.begin()
	if _, ok := c.get(probe, "b"); !ok {
		t.Fatal("a finished load pruned the config of a load in flight")
	}
	c.end(probe, false)
	c.end(second, false)
	third := c.begin()
	c.put(third, "c", cachedConfig{cfg: &HookConfig{}})
	c.end(third, true)
	// the last success and the last load are third: the configs of first,
	// of the failed second and of the probe go
	if n := c.len(); n != 1 {
		t.Fatalf("cache holds %d configs, want 1", n)
	}
}

// TestHookConfigReadsSiblingFile: a hook whose --config prints a file
// beside it gets its new config, and a new key, when only that file
// changes; a change elsewhere in its directory runs --config again but
// keeps the key when the config is the same.
func TestHookConfigReadsSiblingFile(t *testing.T) {
	const hook = "#!/bin/sh\nif [ \"$1\" = --config ]; then cat \"$(dirname \"$0\")/config.json\"; fi\n"
	tests := []struct {
		name, hookDir, other string
		global               bool
	}{
		{name: "module hook", hookDir: "modules/001-one/hooks", other: "modules/001-one/templates/cm.yaml"},
		{name: "global hook", hookDir: "global-hooks/sub", other: "global-hooks/README.md", global: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := t.TempDir()
			writeFile(t, filepath.Join(tree, "modules/values.yaml"), "{}", 0o644)
			writeFile(t, filepath.Join(tree, tt.hookDir, "h.sh"), hook, 0o755)
			config := filepath.Join(tree, tt.hookDir, "config.json")
			writeFile(t, config, `{"configVersion": "v1", "onStartup": 1}`, 0o644)
			writeFile(t, filepath.Join(tree, tt.other), "a", 0o644)
			l := New(WithLogger(quietLogger()))
			hookOf := func() *Hook {
				t.Helper()
				m, err := load(t, l, tree)
				if err != nil {
					t.Fatal(err)
				}
				if tt.global {
					return m.Global.Hooks[0]
				}
				return m.Module("one").Hooks[0]
			}
			first := hookOf()
			if len(first.Config.Schedules) != 0 {
				t.Fatalf("schedules: %+v", first.Config.Schedules)
			}
			writeFile(t, config, `{"configVersion": "v1", "onStartup": 1, "schedule": [{"crontab": "0 * * * * *"}]}`, 0o644)
			second := hookOf()
			if len(second.Config.Schedules) != 1 {
				t.Fatalf("the changed config.json was not read: schedules %+v", second.Config.Schedules)
			}
			if second.Key() == first.Key() {
				t.Fatal("the hook's key did not change with its config")
			}
			runs := l.configs.runCount()
			writeFile(t, filepath.Join(tree, tt.other), "b", 0o644)
			third := hookOf()
			if l.configs.runCount() != runs+1 {
				t.Fatalf("--config runs = %d, want %d", l.configs.runCount(), runs+1)
			}
			if third.Key() != second.Key() {
				t.Fatal("the same config made a new key")
			}
		})
	}
}
