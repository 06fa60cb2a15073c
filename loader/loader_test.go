package loader

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/addonops/addon-operator/values"
)

func load(t *testing.T, l *Loader, dir string) (*Model, error) {
	t.Helper()
	return l.Load(t.Context(), dir, filepath.Join(dir, "modules"), filepath.Join(dir, "global-hooks"))
}

func TestLoadGoodTree(t *testing.T) {
	l := New()
	m, err := load(t, l, "testdata/good")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mod := range m.Modules {
		names = append(names, mod.Name)
	}
	// numeric prefix, then name: 01-some-module is order 1 like the 001-* ones
	want := []string{"module", "nginx-ingress", "simple-one-module", "some-module"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("modules = %v, want %v", names, want)
	}

	mod := m.Module("module")
	if !mod.HasChart || !mod.HasChartFile || mod.EnabledScript == "" || mod.Key != "module" || mod.Order != 1 || mod.DirName != "001-module" {
		t.Fatalf("module = %+v", mod)
	}
	if len(mod.Hooks) != 1 || mod.Hooks[0].Name != "001-module/hooks/module-hooks.sh" {
		t.Fatalf("hooks = %+v", mod.Hooks)
	}
	cfg := mod.Hooks[0].Config
	for b, o := range map[string]float64{OnStartup: 10, BeforeHelm: 1, AfterHelm: 2, AfterDeleteHelm: 3} {
		if got, ok := cfg.Order(b); !ok || got != o {
			t.Errorf("%s order = %v, %v", b, got, ok)
		}
	}
	if len(cfg.Schedules) != 2 || cfg.Schedules[0].Name != "incremental" || !cfg.Schedules[0].AllowFailure || cfg.Schedules[1].Name != "schedule" {
		t.Fatalf("schedules = %+v", cfg.Schedules)
	}
	// "7" is Sunday: 2026-01-03 is a Saturday, so the next 23:59 on day 7 is Sunday the 4th
	next := cfg.Schedules[1].Schedule.Next(time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC))
	if next.Weekday() != time.Sunday {
		t.Fatalf("day 7 fired on %s", next.Weekday())
	}

	simple := m.Module("simple-one-module")
	if !simple.HasChart || simple.HasChartFile {
		t.Fatalf("templates-only chart: %+v", simple)
	}
	k := simple.Hooks[0].Config.Kubernetes[0]
	if simple.Hooks[0].Config.Version != "v1" || k.Name != "pods" || k.Kind != "Pod" || k.ExecuteHookOnSynchronization ||
		!k.WaitForSynchronization || k.KeepFullObjectsInMemory || k.Query == nil || k.Queue != "pods" || k.Group != "g" ||
		!reflect.DeepEqual(k.ExecuteHookOnEvent, []string{EventAdded, EventDeleted}) || !reflect.DeepEqual(k.NameSelector, []string{"a", "b"}) ||
		!reflect.DeepEqual(k.Namespaces, []string{"default"}) || k.FieldSelector[0].Field != "status.phase" {
		t.Fatalf("v1 kubernetes binding = %+v", k)
	}
	if s := simple.Hooks[0].Config.Schedules[0]; s.Queue != "slow" || s.IncludeSnapshotsFrom[0] != "pods" {
		t.Fatalf("v1 schedule = %+v", s)
	}

	var gnames []string
	for _, h := range m.Global.Hooks {
		gnames = append(gnames, h.Name)
	}
	if !reflect.DeepEqual(gnames, []string{"startup.sh", "sub/nested.sh"}) {
		t.Fatalf("global hooks = %v (dot files, openapi/ and non-executables are skipped)", gnames)
	}
	v0 := m.Global.Hooks[0].Config.Kubernetes[0]
	if !v0.V0 || v0.Kind != "pod" || !reflect.DeepEqual(v0.ExecuteHookOnEvent, []string{EventModified}) ||
		v0.LabelSelector.MatchExpressions[0].Operator != "In" || !v0.AllowFailure || v0.Namespaces != nil {
		t.Fatalf("v0 binding = %+v", v0)
	}
	if m.Global.Schemas.Config == nil {
		t.Fatal("global openapi/config-values.yaml not loaded")
	}
	if m.Global.Hooks[0].WorkingDir != m.GlobalHooksDir || mod.Hooks[0].WorkingDir != filepath.Join(mod.Dir, "hooks") {
		t.Fatal("WORKING_DIR is not the hooks directory")
	}
	// lib/ is a library directory, skipped whole as the original does
	if strings.Contains(strings.Join(m.Warnings, "\n"), "lib/functions.sh") {
		t.Fatalf("warnings = %q", m.Warnings)
	}

	// the enable flags of the tree resolve as discovery reads them
	// (docs/lifecycle.md, step 4)
	store, _, err := values.NewStore(m.Values)
	if err != nil {
		t.Fatal(err)
	}
	if store.Enabled("nginxIngress") {
		t.Error("nginx-ingress: enabled in modules/values.yaml, disabled in its own values.yaml: want disabled")
	}
	if _, err := store.SetConfig(map[string]string{"someModuleEnabled": "true"}); err != nil {
		t.Fatal(err)
	}
	if !store.Enabled("someModule") {
		t.Error("some-module: the ConfigMap enables it (its enabled script decides next)")
	}
}

func TestHookConfigCache(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/good")); err != nil {
		t.Fatal(err)
	}
	l := New()
	if _, err := load(t, l, dir); err != nil {
		t.Fatal(err)
	}
	first := l.configs.runCount()
	if first != 4 {
		t.Fatalf("config runs = %d, want 4", first)
	}
	if _, err := load(t, l, dir); err != nil {
		t.Fatal(err)
	}
	if l.configs.runCount() != first {
		t.Fatalf("unchanged hooks ran again: %d runs", l.configs.runCount())
	}
	hook := filepath.Join(dir, "global-hooks/sub/nested.sh")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho '{\"afterAll\": 7}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := load(t, l, dir)
	if err != nil {
		t.Fatal(err)
	}
	// the global hooks' --config may read each other's files: both run
	// again, the modules' hooks do not
	if l.configs.runCount() != first+len(m.Global.Hooks) {
		t.Fatalf("config runs = %d, want %d (only the changed directory's hooks)", l.configs.runCount(), first+len(m.Global.Hooks))
	}
	if o, _ := m.Global.Hooks[1].Config.Order(AfterAll); o != 7 {
		t.Fatalf("changed hook's config not re-read: %v", o)
	}
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		dir  string
		file string // the file the error must name
		want string
	}{
		{dir: "values-yaml", file: "modules/001-one/values.yaml", want: "line 2"},
		{dir: "schema", file: "modules/001-one/openapi/values.yaml", want: "yaml"},
		{dir: "hook-json", file: "modules/001-one/hooks/h.sh", want: "hook config"},
		{dir: "unknown-binding", file: "modules/001-one/hooks/h.sh", want: `unknown binding "onShutdown"`},
		{dir: "global-binding-in-module", file: "modules/001-one/hooks/h.sh", want: `"beforeAll" is for global hooks only`},
		{dir: "module-binding-in-global", file: "global-hooks/h.sh", want: `"afterHelm" is for module hooks only`},
		{dir: "cron", file: "modules/001-one/hooks/h.sh", want: "want 6 fields (second minute hour day-of-month month day-of-week) or 5 (without seconds), got 4"},
		{dir: "jq", file: "modules/001-one/hooks/h.sh", want: "jqFilter"},
		{dir: "hook-fails", file: "modules/001-one/hooks/h.sh", want: "exit status 2: cannot configure"},
		{dir: "hook-hangs", file: "modules/001-one/hooks/h.sh", want: "timed out"},
		{dir: "duplicate-names", file: "modules/002-one", want: `module "one" is also at`},
		{dir: "bad-name", file: "modules/003-two-2fa", want: "converts back to"},
		{dir: "symlink-out", file: "modules/001-one/templates/passwd.yaml", want: "symlink leads out of the tree"},
		{dir: "flag", file: "modules/values.yaml", want: "oneEnabled: want true or false"},
		{dir: "enabled-not-exec", file: "modules/001-one/enabled", want: "not executable"},
	}
	l := New(WithConfigTimeout(500 * time.Millisecond))
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			dir, _ := filepath.Abs(filepath.Join("testdata/bad", tt.dir))
			m, err := load(t, l, dir)
			if err == nil {
				t.Fatalf("loaded a bad tree: %+v", m)
			}
			if m != nil {
				t.Fatal("a failed load returned a model")
			}
			if !strings.Contains(err.Error(), filepath.Join(dir, tt.file)) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant it to name %s and say %q", err, tt.file, tt.want)
			}
		})
	}
}

func TestSymlinkInsideTreeIsFollowed(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/good")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../global-hooks/startup.sh", filepath.Join(dir, "modules/001-module/hooks/linked.sh")); err != nil {
		t.Fatal(err)
	}
	_, err := load(t, New(), dir)
	if err == nil || !strings.Contains(err.Error(), `is for global hooks only, and this is a module hook`) {
		t.Fatalf("linked global hook not loaded as a module hook: %v", err)
	}
	var le *Error
	if !errors.As(err, &le) {
		t.Fatalf("not a loader.Error: %T", err)
	}
}

func TestDiff(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/good")); err != nil {
		t.Fatal(err)
	}
	l := New()
	before, err := load(t, l, dir)
	if err != nil {
		t.Fatal(err)
	}
	same, err := load(t, l, dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := Compare(before, same); !d.Empty() {
		t.Fatalf("unchanged tree diff = %+v", d)
	}

	if err := os.RemoveAll(filepath.Join(dir, "modules/001-nginx-ingress")); err != nil {
		t.Fatal(err)
	}
	removed, err := load(t, l, dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := Compare(before, removed); !d.OnlyRemoved() || !reflect.DeepEqual(d.Removed, []string{"nginx-ingress"}) {
		t.Fatalf("removal diff = %+v", d)
	}

	if err := os.WriteFile(filepath.Join(dir, "modules/001-module/values.yaml"), []byte("module: {a: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "modules/050-new-one"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "modules/values.yaml"), []byte("global: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, err := load(t, l, dir)
	if err != nil {
		t.Fatal(err)
	}
	d := Compare(removed, changed)
	if !reflect.DeepEqual(d.Added, []string{"new-one"}) || !reflect.DeepEqual(d.Changed, []string{"module"}) || !d.Global || d.OnlyRemoved() {
		t.Fatalf("diff = %+v", d)
	}
}

func TestParseHookConfig(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		global  bool
		wantErr string
	}{
		{name: "yaml", in: "onStartup: 1\nbeforeHelm: 2"},
		{name: "float order", in: `{"beforeHelm": 1.5}`},
		{name: "not an object", in: `[1]`, wantErr: "must be a JSON object"},
		{name: "empty output", in: ``, wantErr: "must be a JSON object"},
		{name: "order not a number", in: `{"onStartup": "first"}`, wantErr: "want an ORDER number"},
		{name: "v1 binding in v0", in: `{"kubernetes": []}`, wantErr: "not part of configVersion v0"},
		{name: "v0 binding in v1", in: `{"configVersion":"v1","onKubernetesEvent": []}`, wantErr: "not part of configVersion v1"},
		{name: "unknown field", in: `{"configVersion":"v1","kubernetes": [{"kind":"Pod","colour":"red"}]}`, wantErr: `unknown field "colour"`},
		{name: "bad event", in: `{"configVersion":"v1","kubernetes": [{"kind":"Pod","executeHookOnEvent":["Added","Bogus"]}]}`, wantErr: `"Bogus"`},
		{name: "bad v0 event", in: `{"onKubernetesEvent": [{"kind":"pod","event":["create"]}]}`, wantErr: `"create"`},
		{name: "bad selector", in: `{"configVersion":"v1","kubernetes": [{"kind":"Pod","labelSelector":{"matchExpressions":[{"key":"a","operator":"Near"}]}}]}`, wantErr: "labelSelector"},
		{name: "snapshot of unknown binding", in: `{"configVersion":"v1","schedule": [{"crontab":"* * * * * *","includeSnapshotsFrom":["nope"]}]}`, wantErr: `names "nope"`},
		{name: "descriptor", in: `{"schedule": [{"crontab":"@every 10s"}]}`},
		{name: "bad field operator", in: `{"configVersion":"v1","kubernetes": [{"kind":"Pod","fieldSelector":{"matchExpressions":[{"field":"a","operator":"In","value":"b"}]}}]}`, wantErr: "fieldSelector operator"},
		{name: "kind required", in: `{"configVersion":"v1","kubernetes": [{"name":"x"}]}`, wantErr: "kind is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseHookConfig([]byte(tt.in), tt.global)
			if tt.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestCrontabSundayAsSeven(t *testing.T) {
	saturday := time.Date(2026, 1, 3, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		spec string
		want time.Weekday
	}{
		{"0 0 0 * * 7", time.Sunday},
		{"0 0 0 * * 1", time.Monday},
		{"0 0 0 * * 6-7", time.Sunday}, // Saturday noon has passed midnight; next is Sunday
		{"0 0 0 * * 5-7/2", time.Sunday},
		{"0 0 * * 7", time.Sunday}, // five fields: minute hour dom month dow
		{"0 0 * * 1-2", time.Monday},
	}
	for _, tt := range tests {
		s, err := ParseCrontab(tt.spec)
		if err != nil {
			t.Fatalf("%s: %v", tt.spec, err)
		}
		next := s.Next(saturday)
		if next.Weekday() != tt.want || next.Second() != 0 || next.Minute() != 0 || next.Hour() != 0 {
			t.Errorf("%s: next at %s, want midnight on %s", tt.spec, next, tt.want)
		}
	}
}

// severalDirs writes two modules directories, one/ and two/, and a
// storage/ directory beside them that no list names.
func severalDirs(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	hook := "#!/bin/sh\necho '{\"beforeHelm\": 1}'\n"
	writeFile(t, filepath.Join(base, "one/010-zeta/values.yaml"), "zeta: {v: 1}\n", 0o644)
	writeFile(t, filepath.Join(base, "one/010-zeta/hooks/h.sh"), hook, 0o755)
	writeFile(t, filepath.Join(base, "one/030-gamma/Chart.yaml"), "apiVersion: v2\nname: gamma\nversion: 0.1.0\n", 0o644)
	writeFile(t, filepath.Join(base, "one/values.yaml"), "global: {a: 1, shared: {p: 1}}\nzetaEnabled: true\n", 0o644)
	writeFile(t, filepath.Join(base, "two/010-alpha/values.yaml"), "alpha: {v: 2}\n", 0o644)
	writeFile(t, filepath.Join(base, "two/010-alpha/hooks/h.sh"), hook, 0o755)
	writeFile(t, filepath.Join(base, "two/values.yaml"), "global: {b: 2, shared: {q: 2}}\nalphaEnabled: true\n", 0o644)
	writeFile(t, filepath.Join(base, "storage/linked/values.yaml"), "linked: {v: 3}\n", 0o644)
	writeFile(t, filepath.Join(base, "storage/linked/hooks/h.sh"), hook, 0o755)
	return base
}

// TestSeveralModulesDirs: MODULES_DIR's list makes one ordered list of
// modules; their values.yaml files combine.
func TestSeveralModulesDirs(t *testing.T) {
	base := severalDirs(t)
	for _, tt := range []struct {
		name              string
		root, modulesDirs string
	}{
		{"no root", "", filepath.Join(base, "one") + ":" + filepath.Join(base, "two")},
		{"beneath a root", base, filepath.Join(base, "one") + ":" + filepath.Join(base, "two")},
		// as lifecycle's CheckTree joins the checkout to the whole list
		{"relative inside the root", base, filepath.Join(base, "one:two")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(WithLogger(quietLogger())).Load(t.Context(), tt.root, tt.modulesDirs, filepath.Join(base, "global-hooks"))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, mod := range m.Modules {
				got = append(got, mod.DirName)
			}
			if want := []string{"010-alpha", "010-zeta", "030-gamma"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("modules = %v, want %v", got, want)
			}
			if want := []string{filepath.Join(base, "one"), filepath.Join(base, "two")}; !reflect.DeepEqual(m.ModulesDirs, want) || m.ModulesDir != strings.Join(want, ":") {
				t.Fatalf("ModulesDirs = %v, ModulesDir = %q", m.ModulesDirs, m.ModulesDir)
			}
			if h := m.Module("alpha").Hooks[0]; h.Name != "010-alpha/hooks/h.sh" || h.Path != filepath.Join(base, "two/010-alpha/hooks/h.sh") {
				t.Fatalf("alpha's hook = %+v", h)
			}
			store, _, err := values.NewStore(m.Values)
			if err != nil {
				t.Fatal(err)
			}
			if !store.Enabled("alpha") || !store.Enabled("zeta") || store.Enabled("gamma") {
				t.Fatal("the enabled flags of both values.yaml files do not count")
			}
			g, err := store.GlobalValues()
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := json.Marshal(g); string(b) != `{"global":{"a":1,"b":2,"shared":{"p":1,"q":2}}}` {
				t.Fatalf("global values = %s: the global sections do not merge", b)
			}
		})
	}
}

func TestSeveralModulesDirsConflicts(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, base string)
		file  string // the error names it, and says want
		want  string
	}{
		{
			name: "a module name in two directories",
			setup: func(t *testing.T, base string) {
				writeFile(t, filepath.Join(base, "two/020-zeta/values.yaml"), "{}\n", 0o644)
			},
			file: "two/020-zeta", want: "module \"zeta\" is also at " + "BASE/one/010-zeta",
		},
		{
			name: "a key in two values.yaml files",
			setup: func(t *testing.T, base string) {
				writeFile(t, filepath.Join(base, "two/values.yaml"), "zetaEnabled: false\n", 0o644)
			},
			file: "two/values.yaml", want: "zetaEnabled is also set in BASE/one/values.yaml",
		},
		{
			name: "a bad flag in the second values.yaml",
			setup: func(t *testing.T, base string) {
				writeFile(t, filepath.Join(base, "two/values.yaml"), "alphaEnabled: maybe\n", 0o644)
			},
			file: "two/values.yaml", want: "alphaEnabled: want true or false",
		},
		{
			name:  "a missing directory",
			setup: func(t *testing.T, base string) { _ = os.RemoveAll(filepath.Join(base, "two")) },
			file:  "two", want: "modules directory not found",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := severalDirs(t)
			tt.setup(t, base)
			_, err := New(WithLogger(quietLogger())).Load(t.Context(), base, "one:two", filepath.Join(base, "global-hooks"))
			want := strings.ReplaceAll(tt.want, "BASE", base)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(base, tt.file)+":") || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v\nwant it to name %s and say %q", err, tt.file, want)
			}
		})
	}
}

// TestModuleLinkedFromModulesDir: with no tree root (no-git mode), a
// module's own entry may link anywhere, as in the original's module
// symlinks; links inside the module stay bounded by it. Beneath a root the
// link must stay beneath it.
func TestModuleLinkedFromModulesDir(t *testing.T) {
	base := severalDirs(t)
	symlink(t, "../storage/linked", filepath.Join(base, "two/020-linked"))
	l := New(WithLogger(quietLogger()))
	dirs := filepath.Join(base, "one") + ":" + filepath.Join(base, "two")
	m, err := l.Load(t.Context(), "", dirs, filepath.Join(base, "global-hooks"))
	if err != nil {
		t.Fatal(err)
	}
	mod := m.Module("linked")
	if mod == nil || mod.Dir != filepath.Join(base, "two/020-linked") || len(mod.Hooks) != 1 || mod.Hooks[0].Name != "020-linked/hooks/h.sh" || mod.Hash == "" {
		t.Fatalf("linked module = %+v", mod)
	}
	if o, ok := mod.Hooks[0].Config.Order(BeforeHelm); !ok || o != 1 {
		t.Fatalf("the linked module's hook did not run with --config: %+v", mod.Hooks[0].Config)
	}

	// beneath a root that does not hold storage/, the link leads out
	_, err = l.Load(t.Context(), filepath.Join(base, "two"), filepath.Join(base, "two"), filepath.Join(base, "global-hooks"))
	if err == nil || !strings.Contains(err.Error(), filepath.Join(base, "two/020-linked")+": symlink leads out of the tree") {
		t.Fatalf("rooted: err = %v", err)
	}
	// inside the module, a link out of it is refused, wherever the module is
	symlink(t, "../../one/values.yaml", filepath.Join(base, "storage/linked/templates/x.yaml"))
	_, err = l.Load(t.Context(), "", dirs, filepath.Join(base, "global-hooks"))
	if err == nil || !strings.Contains(err.Error(), "leads out of the tree") {
		t.Fatalf("a link out of the linked module: err = %v", err)
	}
	// a broken module link is an error, never a module that vanished
	_ = os.Remove(filepath.Join(base, "storage/linked/templates/x.yaml"))
	symlink(t, "../storage/gone", filepath.Join(base, "two/030-gone"))
	_, err = l.Load(t.Context(), "", dirs, filepath.Join(base, "global-hooks"))
	if err == nil || !strings.Contains(err.Error(), filepath.Join(base, "two/030-gone")+": broken symlink") {
		t.Fatalf("broken link: err = %v", err)
	}
}
