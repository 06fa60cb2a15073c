package hookrun

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/addonops/addon-operator/internal/executor"
	"github.com/addonops/addon-operator/internal/testtree"
	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
)

// fakeRecorder records the enabled scripts that ran (EnabledRecorder).
type fakeRecorder struct {
	mu   sync.Mutex
	runs []string // module, then "ok" or "failed"
}

var _ EnabledRecorder = (*fakeRecorder)(nil)

func (r *fakeRecorder) EnabledRan(m *loader.Module, _ time.Duration, _ *executor.Usage, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := "ok"
	if err != nil {
		res = "failed"
	}
	r.runs = append(r.runs, m.Name+" "+res)
}

// enabledScript writes body's answer: a shell enabled script.
func enabledScript(body string) string { return "#!/bin/sh\n" + body + "\n" }

// An enabled script decides its module (docs/lifecycle.md, step 4) with
// what it writes to MODULE_ENABLED_RESULT or, left empty, the last line it
// prints, and sees the modules enabled before it; one that fails decides
// nothing (was does); a module whose section does not suit its schema is
// left as was says, with a ConfigRefusal.
func TestResolveEnabled(t *testing.T) {
	t.Parallel()
	const answerTrue = `echo true > "$MODULE_ENABLED_RESULT"`
	tests := []struct {
		name    string
		alpha   string            // alpha's enabled script ("": none)
		beta    string            // beta's
		flags   string            // modules/values.yaml
		config  map[string]string // ConfigMap data
		timeout time.Duration
		was     []string // the modules enabled before
		enabled []string
		failed  map[string]string // module → error substring
		reasons map[string]string
		runs    []string // what the recorder saw
	}{
		{name: "true and false with a reason", alpha: answerTrue,
			beta:    `echo false > "$MODULE_ENABLED_RESULT"; printf '  no nodes \nmore' > "$MODULE_ENABLED_REASON"`,
			enabled: []string{"alpha"}, reasons: map[string]string{"beta": "no nodes"}, runs: []string{"alpha ok", "beta ok"}},
		{name: "the last line printed", alpha: "echo starting; echo true", beta: "echo false",
			enabled: []string{"alpha"}, runs: []string{"alpha ok", "beta ok"}},
		{name: "sees the modules enabled before it", alpha: answerTrue,
			beta:    `if grep -q '"enabledModules":\["alpha"\]' "$VALUES_PATH"; then echo true; else echo false; fi > "$MODULE_ENABLED_RESULT"`,
			enabled: []string{"alpha", "beta"}, runs: []string{"alpha ok", "beta ok"}},
		{name: "a flag off runs no script", flags: "alphaEnabled: false\nbetaEnabled: true\n", alpha: "exit 1", beta: answerTrue,
			enabled: []string{"beta"}, runs: []string{"beta ok"}},
		{name: "a bad answer decides nothing", alpha: `echo maybe > "$MODULE_ENABLED_RESULT"`, beta: "exit 2", was: []string{"alpha"},
			enabled: []string{"alpha"}, runs: []string{"alpha ok", "beta failed"},
			failed: map[string]string{"alpha": "module alpha: enabled script: MODULE_ENABLED_RESULT: want true or false", "beta": "module beta: enabled script: exited 2"}},
		{name: "a FIFO as its result decides nothing", alpha: `rm -f "$MODULE_ENABLED_RESULT"; mkfifo "$MODULE_ENABLED_RESULT"`,
			enabled: []string{"beta"}, runs: []string{"alpha ok"},
			failed: map[string]string{"alpha": "hook alpha enabled script: MODULE_ENABLED_RESULT: is not a regular file"}},
		{name: "a timeout decides nothing", alpha: "sleep 5", timeout: 200 * time.Millisecond, was: []string{"alpha"},
			enabled: []string{"alpha", "beta"}, runs: []string{"alpha failed"},
			failed: map[string]string{"alpha": "module alpha: enabled script: timed out after 200ms"}},
		// admission leaves a module an enabled script enables to discovery
		{name: "a section its schema refuses", beta: answerTrue, config: map[string]string{"beta": "replicas: many\n"}, was: []string{"beta"},
			enabled: []string{"alpha", "beta"}, runs: []string{"beta ok"}, failed: map[string]string{"beta": "not enabled: its ConfigMap section does not match its config schema"}},
		{name: "a refused section of a module not enabled before", beta: answerTrue, config: map[string]string{"beta": "replicas: many\n"},
			enabled: []string{"alpha"}, runs: []string{"beta ok"}, failed: map[string]string{"beta": "replicas"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			flags := tt.flags
			if flags == "" {
				flags = "alphaEnabled: true\nbetaEnabled: true\n"
			}
			files := map[string]string{
				"modules/values.yaml":                         flags,
				"modules/001-alpha/Chart.yaml":                "apiVersion: v2\nname: alpha\nversion: 0.1.0\n",
				"modules/002-beta/Chart.yaml":                 "apiVersion: v2\nname: beta\nversion: 0.1.0\n",
				"modules/002-beta/openapi/config-values.yaml": "type: object\nproperties:\n  replicas: {type: integer}\n",
			}
			if tt.alpha != "" {
				files["modules/001-alpha/enabled"] = enabledScript(tt.alpha)
			}
			if tt.beta != "" {
				files["modules/002-beta/enabled"] = enabledScript(tt.beta)
			}
			dir := testtree.New(t, files)
			model, err := loader.New(loader.WithLogger(quiet()), loader.WithHookConfigs(false)).Load(t.Context(), dir, filepath.Join(dir, "modules"), filepath.Join(dir, "global-hooks"))
			if err != nil {
				t.Fatal(err)
			}
			store, err := runstate.Admit(model, tt.config, nil)
			if err != nil {
				t.Fatal(err)
			}
			rec := &fakeRecorder{}
			tmp := t.TempDir()
			scripts := NewEnabledScripts(EnabledOptions{Logger: quiet(), HookTimeout: tt.timeout, TempDir: tmp, Recorder: rec})
			enabled, failed, reasons, err := scripts.ResolveEnabled(t.Context(), model, store, func(name string) bool { return slices.Contains(tt.was, name) })
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(enabled, tt.enabled) {
				t.Errorf("enabled %v, want %v", enabled, tt.enabled)
			}
			for name, err := range failed {
				if want, ok := tt.failed[name]; !ok || !strings.Contains(err.Error(), want) {
					t.Errorf("%s failed: %v, want %q", name, err, want)
				}
			}
			for name := range tt.failed {
				if failed[name] == nil {
					t.Errorf("%s did not fail", name)
				}
			}
			if refused := failed["beta"]; refused != nil && strings.Contains(tt.name, "section") != IsConfigRefusal(refused) {
				t.Errorf("beta: %v, a ConfigRefusal: %v", refused, IsConfigRefusal(refused))
			}
			if len(reasons) != len(tt.reasons) {
				t.Errorf("reasons %v, want %v", reasons, tt.reasons)
			}
			for name, want := range tt.reasons {
				if reasons[name] != want {
					t.Errorf("%s: reason %q, want %q", name, reasons[name], want)
				}
			}
			if !slices.Equal(rec.runs, tt.runs) {
				t.Errorf("recorded %v, want %v", rec.runs, tt.runs)
			}
			if left := writeTreeLeft(t, tmp); len(left) != 0 {
				t.Errorf("runs left %v", left)
			}
		})
	}
}

// A cancel stops the resolution: an error, not a failed module.
func TestResolveEnabledCanceled(t *testing.T) {
	t.Parallel()
	dir := testtree.New(t, map[string]string{
		"modules/values.yaml":          "alphaEnabled: true\n",
		"modules/001-alpha/Chart.yaml": "apiVersion: v2\nname: alpha\nversion: 0.1.0\n",
		"modules/001-alpha/enabled":    enabledScript("sleep 5"),
	})
	model, err := loader.New(loader.WithLogger(quiet()), loader.WithHookConfigs(false)).Load(t.Context(), dir, filepath.Join(dir, "modules"), "")
	if err != nil {
		t.Fatal(err)
	}
	store, err := runstate.Admit(model, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	// no recorder: EnabledScripts needs none
	_, failed, _, err := NewEnabledScripts(EnabledOptions{Logger: quiet()}).ResolveEnabled(ctx, model, store, func(string) bool { return true })
	if !errors.Is(err, context.DeadlineExceeded) || failed != nil {
		t.Fatalf("err %v, failed %v", err, failed)
	}
}

func writeTreeLeft(t *testing.T, dir string) []string {
	t.Helper()
	f := &fixture{tmp: dir}
	return f.leftovers(t)
}
