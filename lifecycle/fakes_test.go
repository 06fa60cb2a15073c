package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/addonops/addon-operator/kube"
	"github.com/addonops/addon-operator/loader"
)

// fakeConfig is the values ConfigMap in memory: set delivers an edit to
// the watcher as the API server's watch would.
type fakeConfig struct {
	mu       sync.Mutex
	data     map[string]string
	version  int
	onChange func(map[string]string, string)
	// delivered: the watch's first call returned
	delivered bool
}

func newFakeConfig(data map[string]string) *fakeConfig {
	if data == nil {
		data = map[string]string{}
	}
	return &fakeConfig{data: data}
}

func (f *fakeConfig) Get(context.Context) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.data), nil
}

func (f *fakeConfig) Update(_ context.Context, fn func(map[string]string) (map[string]string, error)) (map[string]string, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	next, err := fn(maps.Clone(f.data))
	if err != nil {
		return nil, "", err
	}
	f.data = next
	f.version++
	return maps.Clone(next), strconv.Itoa(f.version), nil
}

// Watch delivers the current data first, as an informer's list does, so
// an edit made before the watch started is not missed.
func (f *fakeConfig) Watch(ctx context.Context, onChange func(map[string]string, string)) {
	f.mu.Lock()
	f.onChange = onChange
	data, version := maps.Clone(f.data), strconv.Itoa(f.version)
	f.mu.Unlock()
	onChange(data, version)
	f.mu.Lock()
	f.delivered = true
	f.mu.Unlock()
	<-ctx.Done()
}

// set is a user's edit of the ConfigMap.
// watched says whether the operator's watch has delivered its first
// data: an edit set before is read by that first call, not delivered as
// an edit, and a test that changes the model meanwhile races with it.
func (f *fakeConfig) watched() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.delivered
}

func (f *fakeConfig) set(data map[string]string) {
	f.mu.Lock()
	f.data = maps.Clone(data)
	f.version++
	version, notify := strconv.Itoa(f.version), f.onChange
	f.mu.Unlock()
	if notify != nil {
		notify(maps.Clone(data), version)
	}
}

// fakeHelm keeps releases in memory and records what was asked of it.
type fakeHelm struct {
	mu       sync.Mutex
	releases map[string]fakeRelease
	calls    []string
	// reads are ReadAhead's and Upgrade's calls, "ahead NAME" and
	// "upgrade NAME", in order
	reads []string
	// hold, when set, is called at the start of each Upgrade (a test
	// holds a module's run there)
	hold func(name string)
}

type fakeRelease struct {
	ours   bool // ours (or the original addon-operator's); false: another tool's
	values map[string]any
}

func newFakeHelm(releases map[string]fakeRelease) *fakeHelm {
	if releases == nil {
		releases = map[string]fakeRelease{}
	}
	return &fakeHelm{releases: releases}
}

func (f *fakeHelm) Upgrade(_ context.Context, r kube.Release) (kube.Result, error) {
	f.mu.Lock()
	hold := f.hold
	f.mu.Unlock()
	if hold != nil {
		hold(r.Name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if rel, ok := f.releases[r.Name]; ok && !rel.ours {
		return kube.Result{}, fmt.Errorf("release %s: %w", r.Name, kube.ErrNotOurs)
	}
	f.calls = append(f.calls, "upgrade "+r.Name)
	f.reads = append(f.reads, "upgrade "+r.Name)
	f.releases[r.Name] = fakeRelease{ours: true, values: r.Values}
	return kube.Result{Upgraded: true, Reason: "changed"}, nil
}

func (f *fakeHelm) Uninstall(_ context.Context, name string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rel, ok := f.releases[name]
	switch {
	case !ok:
		return false, nil
	case !rel.ours:
		return false, fmt.Errorf("release %s: %w", name, kube.ErrNotOurs)
	}
	f.calls = append(f.calls, "uninstall "+name)
	delete(f.releases, name)
	return true, nil
}

func (f *fakeHelm) Purge(ctx context.Context, name string) (bool, error) {
	f.mu.Lock()
	rel, ok := f.releases[name]
	f.mu.Unlock()
	if !ok || !rel.ours {
		return false, nil
	}
	return f.Uninstall(ctx, name)
}

func (f *fakeHelm) Releases(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for name, rel := range f.releases {
		if rel.ours {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (f *fakeHelm) Has(_ context.Context, name string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rel, ok := f.releases[name]
	return ok && rel.ours, nil
}

func (f *fakeHelm) AbsentResources(context.Context, string) ([]string, error) { return nil, nil }

func (f *fakeHelm) ReadAhead(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads = append(f.reads, "ahead "+name)
}

func (f *fakeHelm) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

var (
	_ Helm          = (*fakeHelm)(nil)
	_ ConfigBackend = (*fakeConfig)(nil)
)

// unit is an operator on fakes (no API server): a tree in a temporary
// directory, the ConfigMap and Helm in memory, no kubernetes bindings.
type unit struct {
	t      *testing.T
	dir    string
	op     *Operator
	helm   *fakeHelm
	config *fakeConfig
}

func startUnit(t *testing.T, files map[string]string, config map[string]string, helm *fakeHelm) *unit {
	t.Helper()
	return startUnitWith(t, files, config, helm, func(*Config) {})
}

// startUnitWith is startUnit with a change to the operator's Config.
func startUnitWith(t *testing.T, files map[string]string, config map[string]string, helm *fakeHelm, configure func(*Config)) *unit {
	t.Helper()
	return startUnitIn(t, tree(t, files), config, helm, loader.New(loader.WithLogger(quiet()), loader.WithHookConfigs(false)), configure)
}

// startUnitIn is startUnitWith on a tree already in dir, loaded by ld.
func startUnitIn(t *testing.T, dir string, config map[string]string, helm *fakeHelm, ld *loader.Loader, configure func(*Config)) *unit {
	t.Helper()
	u := &unit{t: t, dir: dir, helm: helm, config: newFakeConfig(config)}
	cfg := Config{
		ModulesDir: u.dir + "/modules", GlobalHooksDir: u.dir + "/global-hooks",
		RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond, Logger: quiet(), ParallelModules: 1,
	}
	configure(&cfg)
	u.op = New(cfg, u.config, helm, ld)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = u.op.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	u.until("the first convergence", u.op.Ready)
	// the ConfigMap watch's first call: an edit a test sets before it is
	// read by that call, not delivered as an edit, and a test that changes
	// the model would race with it
	u.until("the ConfigMap watch", u.config.watched)
	u.idle()
	return u
}

// until polls cond every millisecond for up to 5 s.
func (u *unit) until(what string, cond func() bool) {
	u.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			u.t.Fatalf("timed out waiting for %s; Helm calls %v, status %+v", what, u.helm.called(), u.op.Status().Modules)
		}
		time.Sleep(time.Millisecond)
	}
}

func (u *unit) idle() {
	u.t.Helper()
	u.until("main to drain", func() bool { q := u.op.Queues(); return q != nil && q.Main().Len() == 0 })
}

func (u *unit) state(module string) ModuleStatus {
	for _, m := range u.op.Status().Modules {
		if m.Name == module {
			return m
		}
	}
	return ModuleStatus{}
}
