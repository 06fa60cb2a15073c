package hookrun

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/addonops/addon-operator/loader"
)

// dumpInputs copies what a hook is handed next to it, for the test to
// read: its binding context, values, config values and environment.
const dumpInputs = `out="$WORKING_DIR/out"; mkdir -p "$out"
cp "$BINDING_CONTEXT_PATH" "$out/bc.json"; cp "$VALUES_PATH" "$out/values.json"; cp "$CONFIG_VALUES_PATH" "$out/config.json"
env > "$out/env"`

// A hook gets the documented files and environment (docs/operator.md,
// "What a hook gets"): a global hook the global sections, a module hook
// the global and its module's with global.enabledModules; its files are
// in one directory, removed after the run.
func TestRunHookFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, hook, binding string
		wantValues          string // JSON of VALUES_PATH: config values over the tree's
		wantConfig          string // JSON of CONFIG_VALUES_PATH
	}{
		{"global hook", "g.sh", loader.BeforeAll, `{"global":{"c":"x","g":1}}`, `{"global":{"c":"x"}}`},
		{"module hook", "001-alpha/hooks/h.sh", loader.BeforeHelm,
			`{"alpha":{"a":1,"m":2},"global":{"c":"x","enabledModules":["alpha"],"g":1}}`, `{"alpha":{"m":2},"global":{"c":"x"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, baseTree(map[string]string{
				"global-hooks/g.sh":            hookScript(loader.BeforeAll, dumpInputs),
				"modules/001-alpha/hooks/h.sh": hookScript(loader.BeforeHelm, dumpInputs),
			}))
			if _, _, err := f.trees.SetConfig(map[string]string{"global": "c: x\n", "alpha": "m: 2\n"}, "2", nil); err != nil {
				t.Fatal(err)
			}
			h := f.hook(t, tt.hook)
			bc := []map[string]any{{"binding": tt.binding, "type": "Synchronization"}}
			if _, err := f.r.RunHook(t.Context(), h, tt.binding, bc, false); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(h.WorkingDir, "out")
			read := func(name string) string {
				b, err := os.ReadFile(filepath.Join(out, name))
				if err != nil {
					t.Fatal(err)
				}
				return strings.TrimSpace(string(b))
			}
			if got := read("bc.json"); got != `[{"binding":"`+tt.binding+`","type":"Synchronization"}]` {
				t.Errorf("binding context %s", got)
			}
			if got := read("values.json"); !jsonEqual(got, tt.wantValues) {
				t.Errorf("values %s, want %s", got, tt.wantValues)
			}
			if got := read("config.json"); !jsonEqual(got, tt.wantConfig) {
				t.Errorf("config values %s, want %s", got, tt.wantConfig)
			}
			env := map[string]string{}
			for _, kv := range strings.Split(read("env"), "\n") {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			if env["WORKING_DIR"] != h.WorkingDir {
				t.Errorf("WORKING_DIR %q, want %q", env["WORKING_DIR"], h.WorkingDir)
			}
			var dirs []string
			for _, k := range []string{"BINDING_CONTEXT_PATH", "CONFIG_VALUES_PATH", "VALUES_PATH", "CONFIG_VALUES_JSON_PATCH_PATH",
				"VALUES_JSON_PATCH_PATH", "METRICS_PATH", "KUBERNETES_PATCH_PATH"} {
				if env[k] == "" {
					t.Errorf("%s not set", k)
				}
				dirs = append(dirs, filepath.Dir(env[k]))
			}
			if dirs = slices.Compact(dirs); len(dirs) != 1 || filepath.Dir(dirs[0]) != f.tmp {
				t.Errorf("the run's files are not in one directory of TempDir: %v", dirs)
			}
			if left := f.leftovers(t); len(left) != 0 {
				t.Errorf("the run left %v", left)
			}
		})
	}
}

// What a hook hands back is read, checked, then applied: values patches to
// the running store, config patches to the ConfigMap and the store, object
// patches to the patcher, metrics to the hook metrics store; a bad file
// fails the run, naming the hook and the variable, and nothing of the run
// is applied.
func TestRunHookReadBack(t *testing.T) {
	t.Parallel()
	const valuesPatch = `echo '[{"op":"add","path":"/alpha/b","value":2}]' > "$VALUES_JSON_PATCH_PATH"`
	const configPatch = `echo '{"op":"add","path":"/alpha/c","value":3}' > "$CONFIG_VALUES_JSON_PATCH_PATH"`
	const objectOp = `echo '{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"ns"}}}' > "$KUBERNETES_PATCH_PATH"`
	const metric = `echo '{"name":"t_items","set":7}' > "$METRICS_PATH"`
	type want struct {
		err                   string // substring; "" for none
		values, config        bool   // Result
		alphaB                bool   // the store has alpha.b
		configWrites, objects int
		series                int // hook metrics series
	}
	tests := []struct {
		name string
		body string
		opts func(*Options)
		want want
	}{
		{name: "nothing", body: "true", want: want{}},
		{name: "values patch", body: valuesPatch, want: want{values: true, alphaB: true}},
		{name: "config patch", body: configPatch, want: want{config: true, configWrites: 1}},
		{name: "all of them", body: valuesPatch + "\n" + configPatch + "\n" + objectOp + "\n" + metric,
			want: want{values: true, config: true, alphaB: true, configWrites: 1, objects: 1, series: 1}},
		{name: "a bad values patch applies nothing", body: configPatch + "\n" + metric + "\necho '[{\"op\":' > \"$VALUES_JSON_PATCH_PATH\"",
			want: want{err: "VALUES_JSON_PATCH_PATH"}},
		{name: "a bad metric applies nothing", body: valuesPatch + "\n" + objectOp + "\necho '{\"name\":\"m\",\"action\":\"nope\"}' > \"$METRICS_PATH\"",
			want: want{err: "hook 001-alpha/hooks/h.sh: METRICS_PATH"}},
		{name: "a bad object patch applies nothing", body: valuesPatch + "\necho '{\"operation\":\"Nope\"}' > \"$KUBERNETES_PATCH_PATH\"",
			want: want{err: "hook 001-alpha/hooks/h.sh: KUBERNETES_PATCH_PATH"}},
		{name: "FIFO as values patch", body: `rm -f "$VALUES_JSON_PATCH_PATH"; mkfifo "$VALUES_JSON_PATCH_PATH"`,
			want: want{err: "hook 001-alpha/hooks/h.sh: VALUES_JSON_PATCH_PATH: is not a regular file"}},
		{name: "link as config patch", body: `ln -sf /etc/passwd "$CONFIG_VALUES_JSON_PATCH_PATH"`,
			want: want{err: "CONFIG_VALUES_JSON_PATCH_PATH: is a symbolic link"}},
		{name: "no ConfigMap to write to", body: configPatch, opts: func(o *Options) { o.Config = nil },
			want: want{err: "CONFIG_VALUES_JSON_PATCH_PATH: the operator has no ConfigMap"}},
		{name: "no object patcher", body: valuesPatch + "\n" + objectOp, opts: func(o *Options) { o.ObjectPatcher = nil },
			want: want{err: errNoObjectPatcher.Error(), values: true, alphaB: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var opts []func(*Options)
			if tt.opts != nil {
				opts = append(opts, tt.opts)
			}
			f := newFixture(t, baseTree(map[string]string{"modules/001-alpha/hooks/h.sh": hookScript(loader.BeforeHelm, tt.body)}), opts...)
			res, err := f.r.RunHook(t.Context(), f.hook(t, "001-alpha/hooks/h.sh"), loader.BeforeHelm, nil, false)
			if (tt.want.err == "") != (err == nil) || !strings.Contains(errText(err), tt.want.err) {
				t.Fatalf("err %v, want %q", err, tt.want.err)
			}
			if res.ValuesChanged != tt.want.values || res.ConfigChanged != tt.want.config {
				t.Errorf("result %+v, want values %v config %v", res, tt.want.values, tt.want.config)
			}
			_, store := f.trees.Current()
			vals, verr := store.ModuleValues("alpha", nil)
			if verr != nil {
				t.Fatal(verr)
			}
			if _, ok := vals["alpha"].(map[string]any)["b"]; ok != tt.want.alphaB {
				t.Errorf("alpha values %v, want b: %v", vals["alpha"], tt.want.alphaB)
			}
			data, writes := f.config.get()
			if writes != tt.want.configWrites {
				t.Errorf("%d ConfigMap writes, want %d", writes, tt.want.configWrites)
			}
			if writes > 0 {
				if !strings.Contains(data["alpha"], "c: 3") || f.trees.Load().ConfigData["alpha"] != data["alpha"] || f.trees.Load().ConfigVersion != "2" {
					t.Errorf("ConfigMap %v, running %v (version %s)", data, f.trees.Load().ConfigData, f.trees.Load().ConfigVersion)
				}
			}
			if n := len(f.patcher.applied()); n != tt.want.objects {
				t.Errorf("%d object operations applied, want %d", n, tt.want.objects)
			}
			if n := f.metrics.HookStore.Series(); n != tt.want.series {
				t.Errorf("%d hook metrics series, want %d", n, tt.want.series)
			}
		})
	}
}

// A failed run is one line without the hook's output, which /debug keeps
// (Failures) until the hook succeeds; a failed hook's status patches
// marked ignoreHookError still apply, nothing else it wrote does; object
// patches that fail make one line too, their API errors kept for /debug.
func TestRunHookFailures(t *testing.T) {
	t.Parallel()
	const statusOp = `{"operation":"MergePatch","kind":"Thing","namespace":"ns","name":"t","subresource":"status","mergePatch":{"status":{"x":1}},"ignoreHookError":true}`
	const plainOp = `{"operation":"MergePatch","kind":"Thing","namespace":"ns","name":"t","mergePatch":{"data":{"x":1}}}`
	tests := []struct {
		name       string
		body       string
		patcherErr error
		timeout    time.Duration
		wantErr    string // the whole one-line message
		wantOutput string // substring of Failures' output
		objects    int
	}{
		{name: "exit status", body: "echo 'password=hunter2' >&2; exit 3",
			wantErr: "hook 001-alpha/hooks/h.sh (beforeHelm): exited 3", wantOutput: "password=hunter2"},
		{name: "timeout", body: "sleep 5", timeout: 200 * time.Millisecond,
			wantErr: "hook 001-alpha/hooks/h.sh (beforeHelm): timed out after 200ms (process group killed)"},
		{name: "status patches on failure", body: "printf '%s\\n%s\\n' '" + statusOp + "' '" + plainOp + "' > \"$KUBERNETES_PATCH_PATH\"; exit 1",
			wantErr: "hook 001-alpha/hooks/h.sh (beforeHelm): exited 1", objects: 1},
		{name: "object patches fail", body: "echo '" + plainOp + "' > \"$KUBERNETES_PATCH_PATH\"", patcherErr: errAPI,
			wantErr:    "hook 001-alpha/hooks/h.sh: KUBERNETES_PATCH_PATH: an operation failed (1 of 1 operations failed; their errors are in the log and /debug/hooks)",
			wantOutput: "password=hunter2", objects: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, baseTree(map[string]string{"modules/001-alpha/hooks/h.sh": hookScript(loader.BeforeHelm, tt.body)}),
				func(o *Options) { o.HookTimeout = tt.timeout })
			f.patcher.err = tt.patcherErr
			h := f.hook(t, "001-alpha/hooks/h.sh")
			_, err := f.r.RunHook(t.Context(), h, loader.BeforeHelm, nil, false)
			if errText(err) != tt.wantErr {
				t.Fatalf("err %q, want %q", errText(err), tt.wantErr)
			}
			var he *HookError
			if !errors.As(err, &he) || strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("err %v: want a HookError without the output", err)
			}
			got := f.r.Failures().Get(h.Name)
			if got.Err != tt.wantErr || !strings.Contains(got.Output, tt.wantOutput) {
				t.Errorf("failure %+v, want %q with output %q", got, tt.wantErr, tt.wantOutput)
			}
			if n := len(f.patcher.applied()); n != tt.objects {
				t.Errorf("%d object operations applied, want %d", n, tt.objects)
			}
			// the hook succeeds: its failure is forgotten
			if err := os.WriteFile(h.Path, []byte(hookScript(loader.BeforeHelm, "true")), 0o755); err != nil {
				t.Fatal(err)
			}
			f.patcher.err = nil
			if _, err := f.r.RunHook(t.Context(), h, loader.BeforeHelm, nil, false); err != nil {
				t.Fatal(err)
			}
			if got := f.r.Failures().Get(h.Name); got != (Failure{}) {
				t.Errorf("failure %+v after a success", got)
			}
		})
	}
}

// PrepareRun makes the extra result files a caller asks for (a webhook's
// response) beside the others, and Env puts more and the hook's own
// environment after the documented variables.
func TestPrepareRunExtraFiles(t *testing.T) {
	t.Parallel()
	f := newFixture(t, baseTree(nil))
	_, store := f.trees.Current()
	files, err := f.r.PrepareRun(store, "alpha", []map[string]any{{"binding": "b"}}, "response.json")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(files.Dir)
	if st, err := os.Stat(filepath.Join(files.Dir, "response.json")); err != nil || st.Size() != 0 {
		t.Fatalf("response.json: %v", err)
	}
	env := files.Env(&loader.Hook{WorkingDir: "/w", Env: []string{"MODULE_NAME=alpha"}}, "RESPONSE_PATH=r")
	if n := len(env); n != 10 || env[n-2] != "RESPONSE_PATH=r" || env[n-1] != "MODULE_NAME=alpha" || env[1] != "WORKING_DIR=/w" {
		t.Fatalf("env %v", env)
	}
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// secretConfig is the values ConfigMap with a values Secret merged over
// it (kube.ClusterValues): writes reach the ConfigMap alone.
type secretConfig struct {
	*fakeConfig
	secret map[string]string
}

var _ clusterSide = secretConfig{}

// Update writes the ConfigMap and returns the merged data, as
// kube.ClusterValues does.
func (c secretConfig) Update(ctx context.Context, fn func(map[string]string) (map[string]string, error)) (map[string]string, string, error) {
	data, ver, err := c.fakeConfig.Update(ctx, fn)
	if err != nil {
		return nil, "", err
	}
	merged, _ := c.ClusterData(data)
	return merged, ver, nil
}

func (c secretConfig) ClusterData(cm map[string]string) (map[string]string, error) {
	out := maps.Clone(cm)
	maps.Copy(out, c.secret)
	return out, nil
}

// A config patch is checked with the values Secret merged over the
// ConfigMap, as it will be read: a schema that needs a value the Secret
// alone holds accepts it; the ConfigMap gets the patch alone.
func TestConfigPatchCheckedWithSecret(t *testing.T) {
	t.Parallel()
	const configPatch = `echo '{"op":"add","path":"/alpha/c","value":3}' > "$CONFIG_VALUES_JSON_PATCH_PATH"`
	files := baseTree(map[string]string{
		"modules/001-alpha/hooks/h.sh":                 hookScript(loader.BeforeHelm, configPatch),
		"modules/001-alpha/openapi/config-values.yaml": "type: object\nproperties:\n  a: {type: integer}\n  c: {type: integer}\n  pw: {type: string}\ndependencies:\n  c: [pw]\n",
	})
	for _, withSecret := range []bool{false, true} {
		var cfg *fakeConfig
		f := newFixture(t, files, func(o *Options) {
			cfg = o.Config.(*fakeConfig)
			if withSecret {
				o.Config = secretConfig{cfg, map[string]string{"alpha": "pw: from-the-secret\n"}}
			}
		})
		_, err := f.r.RunHook(t.Context(), f.hook(t, "001-alpha/hooks/h.sh"), loader.BeforeHelm, nil, false)
		if withSecret != (err == nil) {
			t.Fatalf("with a Secret %v: err %v", withSecret, err)
		}
		if data, _ := cfg.get(); withSecret && (!strings.Contains(data["alpha"], "c: 3") || strings.Contains(data["alpha"], "from-the-secret")) {
			t.Fatalf("ConfigMap written: %v", data)
		}
	}
}
