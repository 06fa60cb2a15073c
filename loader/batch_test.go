package loader

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/addonops/addon-operator/internal/batchtest"
)

// batchConfig is a module-sdk v0.12.0 `hook config` answer, as its
// controller encodes sdkhook.BatchHookConfig.
const batchConfig = `{"version":"v1","hooks":[
 {"configVersion":"v1","metadata":{"name":"first","path":"hooks/first"},
  "kubernetes":[{"name":"pods","apiVersion":"v1","kind":"Pod","executeHookOnEvent":false,
   "namespace":{"nameSelector":{"matchNames":["kube-system"]}},"jqFilter":".metadata.name"},
   {"name":"cms","kind":"ConfigMap","keepFullObjectsInMemory":true,"executeHookOnSynchronization":false}],
  "onStartup":5,"beforeHelm":10,"settings":{"executionMinInterval":3000000000,"executionBurst":2}},
 {"configVersion":"v1","metadata":{"name":"second","path":"hooks/second"},
  "schedule":[{"name":"every-minute","crontab":"0 * * * * *","queue":"slow"}],"afterDeleteHelm":1}],
 "readiness":{"configVersion":"v1","metadata":{"name":"readiness","path":"common-hooks/readiness"},
  "schedule":[{"name":"mod-moduleReadinessSchedule","crontab":"*/15 * * * * *"}]},
 "has_settings_check":true}
`

// argsHook is a shell hook that notes every call's arguments in a file
// beside it, so a test sees it was only ever asked --config.
const argsHook = "#!/bin/sh\necho \"$@\" >> \"$(dirname \"$0\")/../../../calls\"\nif [ \"$1\" = --config ]; then echo '{\"configVersion\":\"v1\",\"afterHelm\":1}'; fi\n"

func TestBatchHookLoads(t *testing.T) {
	dir := t.TempDir()
	hooks := filepath.Join(dir, "modules", "001-mod", "hooks")
	writeFile(t, filepath.Join(dir, "modules", "001-mod", "values.yaml"), "mod: {}\n", 0o644)
	writeFile(t, filepath.Join(hooks, "a.sh"), argsHook, 0o755)
	writeFile(t, filepath.Join(hooks, "noext"), argsHook, 0o755)
	batchtest.Build(t, hooks, "batch", batchtest.Options{Config: batchConfig})
	batchtest.Build(t, filepath.Join(dir, "global-hooks"), "gbatch", batchtest.Options{
		Config: `{"version":"v1","hooks":[{"metadata":{"name":"g"},"beforeHelm":3,"afterHelm":4,"afterDeleteHelm":5}]}`,
	})
	l := New(WithLogger(quietLogger()))
	m, err := load(t, l, dir)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Name string
		Args []string
		Env  []string
	}
	var got []row
	for _, h := range m.Module("mod").Hooks {
		got = append(got, row{h.Name, h.Args, h.Env})
	}
	want := []row{
		{"001-mod/hooks/a.sh", nil, nil},
		{"001-mod/hooks/batch:first:0", []string{"hook", "run", "0"}, []string{"MODULE_NAME=mod"}},
		{"001-mod/hooks/batch:second:1", []string{"hook", "run", "1"}, []string{"MODULE_NAME=mod"}},
		{"001-mod/hooks/batch-readiness", []string{"hook", "ready"}, []string{"MODULE_NAME=mod"}},
		{"001-mod/hooks/noext", nil, nil},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("hooks =\n%+v\nwant\n%+v", got, want)
	}
	hs := m.Module("mod").Hooks
	if hs[1].Path != hs[2].Path || hs[1].Hash == hs[2].Hash || hs[1].WorkingDir != hs[0].WorkingDir {
		t.Fatalf("batch hooks share the file, not the hash: %+v %+v", hs[1], hs[2])
	}
	// the scripts were asked --config only: no `hook list`, no `hook config`
	calls, _ := os.ReadFile(filepath.Join(dir, "calls"))
	if string(calls) != "--config\n--config\n" {
		t.Fatalf("scripts were called with %q", calls)
	}

	first := hs[1].Config
	for b, o := range map[string]float64{OnStartup: 5, BeforeHelm: 10} {
		if got, ok := first.Order(b); !ok || got != o {
			t.Errorf("%s = %v, %v", b, got, ok)
		}
	}
	if len(first.Orders) != 2 {
		t.Errorf("orders = %v", first.Orders)
	}
	pods, cms := first.Kubernetes[0], first.Kubernetes[1]
	if pods.Group != "main" || len(pods.ExecuteHookOnEvent) != 0 || !pods.ExecuteHookOnSynchronization || !pods.WaitForSynchronization ||
		pods.KeepFullObjectsInMemory || !reflect.DeepEqual(pods.Namespaces, []string{"kube-system"}) || pods.Query == nil {
		t.Errorf("pods binding = %+v", pods)
	}
	if cms.Group != "main" || len(cms.ExecuteHookOnEvent) != 3 || cms.ExecuteHookOnSynchronization || !cms.KeepFullObjectsInMemory {
		t.Errorf("cms binding = %+v", cms)
	}
	if s := first.Settings; s == nil || s.ExecutionMinInterval != 3*time.Second || s.ExecutionBurst != 2 {
		t.Errorf("settings = %+v", s)
	}
	second := hs[2].Config
	if o, ok := second.Order(AfterDeleteHelm); !ok || o != 1 || len(second.Schedules) != 1 || second.Schedules[0].Queue != "slow" || second.Schedules[0].Group != "main" {
		t.Errorf("second = %+v", second)
	}
	if r := hs[3].Config; len(r.Schedules) != 1 || r.Schedules[0].Name != "mod-moduleReadinessSchedule" {
		t.Errorf("readiness = %+v", r)
	}
	// has_settings_check makes the executable the module's settings check
	if mod := m.Module("mod"); mod.SettingsCheck != filepath.Join(hooks, "batch") {
		t.Errorf("settings check = %q", mod.SettingsCheck)
	}

	// a global batch hook's beforeHelm and afterHelm are beforeAll and
	// afterAll; its delete bindings are ignored, as in the original
	g := m.Global.Hooks
	if len(g) != 1 || g[0].Name != "gbatch:g:0" || !reflect.DeepEqual(g[0].Env, []string{"MODULE_NAME=global"}) ||
		!reflect.DeepEqual(g[0].Config.Orders, map[string]float64{BeforeAll: 3, AfterAll: 4}) {
		t.Fatalf("global hooks = %+v (%+v)", g, g[0].Config)
	}

	// a reload asks nothing again: the answers are cached by content
	runs := l.configs.runCount()
	m2, err := load(t, l, dir)
	if err != nil {
		t.Fatal(err)
	}
	if l.configs.runCount() != runs || m2.Module("mod").Hooks[1].Key() != hs[1].Key() {
		t.Fatalf("reload ran %d more configs", l.configs.runCount()-runs)
	}
	if m2.Module("mod").SettingsCheck != m.Module("mod").SettingsCheck {
		t.Fatalf("a cached answer lost the settings check: %q", m2.Module("mod").SettingsCheck)
	}
}

// A settings check (has_settings_check) is its module's: an executable
// that holds only a check is one, is left out of the chart, and a module
// has at most one.
func TestBatchSettingsCheckLoads(t *testing.T) {
	onlyCheck := `{"version":"v1","hooks":[],"has_settings_check":true}`
	hookOnly := `{"version":"v1","hooks":[{"metadata":{"name":"h"},"afterHelm":1}]}`
	cases := []struct {
		name    string
		configs map[string]string // executable name -> hook config
		check   string            // the module's SettingsCheck, by file name
		exclude []string
		err     string
	}{
		{"a check alone", map[string]string{"check": onlyCheck}, "check", []string{"hooks/check"}, ""},
		{"no check", map[string]string{"run": hookOnly}, "", []string{"hooks/run"}, ""},
		{"a check beside hooks", map[string]string{"check": onlyCheck, "run": hookOnly}, "check", []string{"hooks/run", "hooks/check"}, ""},
		{"two checks", map[string]string{"c1": onlyCheck, "c2": onlyCheck}, "", nil, "a second settings check"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			hooks := filepath.Join(dir, "modules", "001-mod", "hooks")
			writeFile(t, filepath.Join(dir, "modules", "001-mod", "values.yaml"), "mod: {}\n", 0o644)
			for name, cfg := range c.configs {
				batchtest.Build(t, hooks, name, batchtest.Options{Config: cfg})
			}
			m, err := load(t, New(WithLogger(quietLogger())), dir)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), hooks) {
					t.Fatalf("err = %v, want one naming the file and saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			mod := m.Module("mod")
			want := ""
			if c.check != "" {
				want = filepath.Join(hooks, c.check)
			}
			if mod.SettingsCheck != want {
				t.Fatalf("settings check = %q, want %q", mod.SettingsCheck, want)
			}
			if got := mod.BatchExecutables(); !reflect.DeepEqual(got, c.exclude) {
				t.Fatalf("left out of the chart: %v, want %v", got, c.exclude)
			}
		})
	}
}

func TestBatchHookProbe(t *testing.T) {
	tests := []struct {
		name    string
		opts    []batchtest.Options
		loader  []Option
		hooks   []string // names, when the load succeeds
		args    [][]string
		wantErr []string // parts of the error, which names the file
	}{
		{
			name:  "a compiled hook that answers --config",
			opts:  []batchtest.Options{{Mode: batchtest.Plain, Config: `{"configVersion":"v1","onStartup":1}`}},
			hooks: []string{"001-mod/hooks/h0"}, args: [][]string{nil},
		},
		{
			name:  "module-sdk's older format: a list",
			opts:  []batchtest.Options{{Config: `[{"metadata":{"name":"a"},"onStartup":1},{"metadata":{"name":"b"},"afterHelm":2}]`}},
			hooks: []string{"001-mod/hooks/h0:a:0", "001-mod/hooks/h0:b:1"},
			args:  [][]string{{"hook", "run", "0"}, {"hook", "run", "1"}},
		},
		{
			name:  "no hooks",
			opts:  []batchtest.Options{{Config: `{"version":"v1","hooks":[]}`}},
			hooks: []string{},
		},
		{
			name:    "an unknown version",
			opts:    []batchtest.Options{{Config: `{"version":"v2","hooks":[]}`}},
			wantErr: []string{"001-mod/hooks/h0: batch hook config", `version "v2": want "v1"`},
		},
		{
			name:    "an unknown field",
			opts:    []batchtest.Options{{Config: `{"version":"v1","hooks":[{"metadata":{"name":"a"},"onStratup":1}]}`}},
			wantErr: []string{"001-mod/hooks/h0: batch hook config", `unknown field "onStratup"`},
		},
		{
			name:    "a bad binding",
			opts:    []batchtest.Options{{Config: `{"version":"v1","hooks":[{"metadata":{"name":"a"},"kubernetes":[{"name":"k","kind":"Pod","jqFilter":".["}]}]}`}},
			wantErr: []string{"001-mod/hooks/h0: batch hook config", "hook 0 (a): kubernetes: entry 1 (k): jqFilter"},
		},
		{
			name: "two readiness hooks in a module",
			opts: []batchtest.Options{
				{Config: `{"version":"v1","hooks":[],"readiness":{"metadata":{"name":"r"}}}`},
				{Config: `{"version":"v1","hooks":[],"readiness":{"metadata":{"name":"r"}}}`},
			},
			wantErr: []string{"001-mod/hooks/h1: a second readiness hook (the first is in", "001-mod/hooks/h0)"},
		},
		{
			name:    "`hook config` past its timeout",
			opts:    []batchtest.Options{{Mode: batchtest.Sleep}},
			loader:  []Option{WithConfigTimeout(500 * time.Millisecond)},
			wantErr: []string{"001-mod/hooks/h0: run with --config", "nor is it a batch hook: `hook config`: timed out after 500ms"},
		},
		{
			name:    "`hook config` over the output limit",
			opts:    []batchtest.Options{{Config: `{"version":"v1","hooks":[{"metadata":{"name":"` + strings.Repeat("x", 100) + `"}}]}`}},
			loader:  []Option{WithMaxConfigOutput(64)},
			wantErr: []string{"001-mod/hooks/h0: run with --config", "nor is it a batch hook: `hook config` printed more than 64 bytes"},
		},
		{
			name:    "a binary that is no hook",
			opts:    []batchtest.Options{{Config: `not json`}},
			wantErr: []string{"001-mod/hooks/h0: run with --config", "nor is it a batch hook: `hook config` printed no batch config"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			hooks := filepath.Join(dir, "modules", "001-mod", "hooks")
			for i, o := range tt.opts {
				batchtest.Build(t, hooks, "h"+string(rune('0'+i)), o)
			}
			m, err := load(t, New(append([]Option{WithLogger(quietLogger())}, tt.loader...)...), dir)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatal("loaded")
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Fatalf("err = %v\nwant %q in it", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			names, args := []string{}, [][]string{}
			for _, h := range m.Module("mod").Hooks {
				names, args = append(names, h.Name), append(args, h.Args)
			}
			if !reflect.DeepEqual(names, tt.hooks) || (tt.args != nil && !reflect.DeepEqual(args, tt.args)) {
				t.Fatalf("hooks = %q %q", names, args)
			}
		})
	}
}

// A batch executable kept outside the module and linked into its hooks/
// through the tree root alias is asked `hook config`, runs its hooks and
// its settings check as its real file beneath the root, and is still left
// out of the chart by its path in the module (docs/operator.md, "Trees
// from git").
func TestBatchThroughTreeRootAlias(t *testing.T) {
	root := filepath.Join(t.TempDir(), "repo")
	shared := filepath.Join(root, "shared_bin")
	batchtest.Build(t, shared, "check", batchtest.Options{Config: `{"version":"v1","hooks":[{"metadata":{"name":"h"},"afterHelm":1}],"has_settings_check":true}`})
	writeFile(t, filepath.Join(root, "modules", "001-mod", "values.yaml"), "mod: {}\n", 0o644)
	if err := os.MkdirAll(filepath.Join(root, "modules", "001-mod", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/deckhouse/shared_bin/check", filepath.Join(root, "modules", "001-mod", "hooks", "check")); err != nil {
		t.Fatal(err)
	}
	l := New(WithLogger(quietLogger()), WithTreeRootAlias("/deckhouse"))
	m, err := l.Load(t.Context(), root, filepath.Join(root, "modules"), filepath.Join(root, "global-hooks"))
	if err != nil {
		t.Fatal(err)
	}
	mod, exe := m.Module("mod"), filepath.Join(shared, "check")
	if mod.SettingsCheck != exe {
		t.Fatalf("settings check = %q, want %q", mod.SettingsCheck, exe)
	}
	if len(mod.Hooks) != 1 || mod.Hooks[0].Path != exe || mod.Hooks[0].Name != "001-mod/hooks/check:h:0" {
		t.Fatalf("hooks = %+v, want one of %s", mod.Hooks, exe)
	}
	if got := mod.BatchExecutables(); !reflect.DeepEqual(got, []string{"hooks/check"}) {
		t.Fatalf("left out of the chart: %v, want [hooks/check]", got)
	}
}
