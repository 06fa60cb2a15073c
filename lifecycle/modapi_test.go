package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/addonops/addon-operator/lifecycle/hookrun"
	"github.com/addonops/addon-operator/lifecycle/runstate"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/addonops/addon-operator/internal/batchtest"
	"github.com/addonops/addon-operator/loader"
)

// checkOnly is module-sdk's `hook config` for an executable that holds a
// settings check and no hook.
const checkOnly = `{"version":"v1","hooks":[],"has_settings_check":true}`

// checkRun is one `hook check` the batch executable recorded.
type checkRun struct {
	Hook     string         `json:"hook"`
	Settings map[string]any `json:"settings"`
	Module   string         `json:"module"`
}

// logLines collects an operator's log for a test to read.
type logLines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A ConfigMap edit of a module's section is judged by the module's
// settings check (module-sdk's `hook check`, a real executable): a refusal
// refuses the edit with the check's message and keeps the data the store
// holds; an answer with warnings, or none, lets it in. The steps run in
// order, each against the data the one before left.
func TestSettingsCheckJudgesEdits(t *testing.T) {
	dir := tree(t, merged(withPrefix("modules/001-sized", moduleChart("sized", "sized")),
		map[string]string{"modules/001-sized/values.yaml": "sizedEnabled: true\n"}))
	batchtest.Build(t, filepath.Join(dir, "modules", "001-sized", "hooks"), "check", batchtest.Options{Config: checkOnly})
	records := filepath.Join(t.TempDir(), "records.jsonl")
	t.Setenv("RECORD_FILE", records)
	u := startUnitIn(t, dir, map[string]string{"sized": "replicas: 1\n"}, newFakeHelm(nil), loader.New(loader.WithLogger(quiet())), func(*Config) {})

	steps := []struct {
		name    string
		data    map[string]string
		refused string         // what the refusal says; "" when admitted
		checked map[string]any // the settings the check read; nil: not asked
	}{
		{"over the check's limit", map[string]string{"sized": "replicas: 5\n"}, "refuses its section: replicas: at most 3, got 5", map[string]any{"replicas": 5.0}},
		{"a warning admits", map[string]string{"sized": "replicas: 3\n"}, "", map[string]any{"replicas": 3.0}},
		{"the same section: not asked", map[string]string{"sized": "replicas: 3\n", "global": "x: 1\n"}, "", nil},
		{"a plain pass", map[string]string{"sized": "replicas: 2\n"}, "", map[string]any{"replicas": 2.0}},
		{"no section: {}", map[string]string{}, "", map[string]any{}},
		{"a section that does not parse: the schemas' words", map[string]string{"sized": "replicas: [\n"}, "ConfigMap key sized", nil},
	}
	for _, s := range steps {
		n := len(readJSONLines[checkRun](t, records))
		before := u.op.trees.Load().ConfigData
		_, _, _, ok, err := u.op.steps.checks.set(t.Context(), s.data, "")
		runs := readJSONLines[checkRun](t, records)[n:]
		switch {
		case s.refused == "" && err != nil:
			t.Fatalf("%s: refused: %v", s.name, err)
		case s.refused != "" && (err == nil || !strings.Contains(err.Error(), s.refused)):
			t.Fatalf("%s: err = %v, want one saying %q", s.name, err, s.refused)
		case s.refused != "" && (ok || !maps.Equal(u.op.trees.Load().ConfigData, before)):
			t.Fatalf("%s: refused data was adopted: %v", s.name, u.op.trees.Load().ConfigData)
		case s.refused == "" && !maps.Equal(u.op.trees.Load().ConfigData, s.data):
			t.Fatalf("%s: admitted data not held: %v", s.name, u.op.trees.Load().ConfigData)
		case s.checked == nil && len(runs) != 0:
			t.Fatalf("%s: the check ran: %+v", s.name, runs)
		case s.checked != nil && (len(runs) != 1 || runs[0].Hook != "check" || runs[0].Module != "sized"):
			t.Fatalf("%s: check runs = %+v, want one for module sized", s.name, runs)
		case s.checked != nil:
			assertJSON(t, runs[0].Settings, mustJSON(t, s.checked))
		}
	}
}

// A settings check that the running tree no longer has does not admit an
// edit: setConfig refuses data checked against another model, and the
// edit is checked again against the running one.
func TestSettingsCheckedAgainstTheRunningTree(t *testing.T) {
	u := startUnit(t, merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\n"}, chartOnly("001-alpha")), nil, newFakeHelm(nil))
	other := &loader.Model{}
	if _, ok, err := u.op.trees.SetConfig(map[string]string{"alpha": "x: 1\n"}, "", other); !errors.Is(err, runstate.ErrTreeMoved) || ok {
		t.Fatalf("setConfig checked against another model: ok %v, err %v", ok, err)
	}
	if _, ok, err := u.op.trees.SetConfig(map[string]string{"alpha": "x: 1\n"}, "", u.op.trees.Load().Model); err != nil || !ok {
		t.Fatalf("setConfig checked against the running model: ok %v, err %v", ok, err)
	}
	if _, _, _, ok, err := u.op.steps.checks.set(t.Context(), map[string]string{"alpha": "x: 2\n"}, ""); err != nil || !ok {
		t.Fatalf("an edit without settings checks: ok %v, err %v", ok, err)
	}
}

// An enabled script that answers false gives its reason in
// MODULE_ENABLED_REASON: /status shows its first line, bounded, while the
// module is disabled, and nothing once the script enables it.
func TestEnabledScriptReason(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes
	script := func(reason string) string {
		return "#!/bin/sh\nif [ -e \"$(dirname \"$0\")/on\" ]; then echo true > \"$MODULE_ENABLED_RESULT\"; echo 'ignored' > \"$MODULE_ENABLED_REASON\"; exit 0; fi\n" +
			"echo false > \"$MODULE_ENABLED_RESULT\"\nprintf '%s' '" + reason + "' > \"$MODULE_ENABLED_REASON\"\n"
	}
	files := merged(
		map[string]string{"modules/values.yaml": "alphaEnabled: true\nbetaEnabled: true\ngammaEnabled: true\n"},
		chartOnly("001-alpha"), chartOnly("002-beta"), chartOnly("003-gamma"),
		map[string]string{
			"modules/001-alpha/enabled": script("  no ingress nodes in the cluster \nsecond line\n"),
			"modules/002-beta/enabled":  script(""),
			"modules/003-gamma/enabled": script(long),
		})
	u := startUnit(t, files, nil, newFakeHelm(nil))
	cut := strings.Repeat("é", hookrun.MaxStatusLine/2) + "…"
	for module, want := range map[string]string{"alpha": "no ingress nodes in the cluster", "beta": "", "gamma": cut} {
		if st := u.state(module); st.Enabled || st.DisabledReason != want {
			t.Fatalf("%s: enabled %v, reason %q, want disabled for %q", module, st.Enabled, st.DisabledReason, want)
		}
	}
	var dm struct{ Modules []DebugModule }
	_, body := serveHandler(t, u.op.Handler(HTTPOptions{}))("/debug/modules")
	if err := json.Unmarshal([]byte(body), &dm); err != nil || dm.Modules[0].DisabledReason != "no ingress nodes in the cluster" {
		t.Fatalf("/debug/modules = %s, %v", body, err)
	}
	// the script enables alpha: the reason it still writes is not shown
	if err := os.WriteFile(filepath.Join(u.dir, "modules", "001-alpha", "on"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	u.config.set(map[string]string{"global": "x: 1\n"})
	u.until("alpha enabled", func() bool { return u.state("alpha").Enabled })
	if st := u.state("alpha"); st.DisabledReason != "" {
		t.Fatalf("an enabled module shows the reason %q", st.DisabledReason)
	}
}

// What a settings check prints is read as module-sdk prints it, and
// nothing else is taken for an answer (a readiness hook's: hookrun).
func TestModuleSDKAnswers(t *testing.T) {
	yes, no := true, false
	results := []struct {
		stderr string
		valid  *bool
		msg    string
	}{
		{`{"valid":false,"message":"replicas: at most 3","warnings":null}`, &no, "replicas: at most 3"},
		{"a log line\n{\"valid\":true,\"message\":\"\",\"warnings\":[\"w\"]}\n", &yes, ""},
		{`{"message":"execute: boom"}`, nil, ""}, // no "valid": not a check's answer
		{"panic: runtime error", nil, ""},
		{"", nil, ""},
	}
	for _, c := range results {
		res, ok := checkResultOf(c.stderr)
		if ok != (c.valid != nil) || (ok && (*res.Valid != *c.valid || res.Message != c.msg)) {
			t.Errorf("checkResultOf(%q) = %+v, %v", c.stderr, res, ok)
		}
	}
	for section, want := range map[string]string{
		"replicas: 2\n": `{"replicas":2}`, "": `{}`, "null": `{}`, "false": "", "[1]": "", "x: [": "",
	} {
		got, ok := settingsOf(section)
		if ok != (want != "") || string(got) != want {
			t.Errorf("settingsOf(%q) = %s, %v; want %s", section, got, ok, want)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The settings checks run for the sections the store validates, as the
// schemas do (docs/operator.md, "Values"): an enabled module's, not a
// disabled one's, and one the ConfigMap's own flag enables.
func TestSettingsChecksFollowValidatedSections(t *testing.T) {
	u := startUnit(t, merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\n"}, chartOnly("001-alpha"), chartOnly("002-beta")), nil, newFakeHelm(nil))
	for _, m := range u.op.trees.Load().Model.Modules {
		m.SettingsCheck = m.Dir + "/hooks/check"
	}
	var asked []string
	u.op.steps.checks.check = func(_ context.Context, m *loader.Module, _ string) error {
		asked = append(asked, m.Name)
		return nil
	}
	steps := []struct {
		name  string
		data  map[string]string
		asked []string
	}{
		{"an enabled module's section", map[string]string{"alpha": "x: 1\n"}, []string{"alpha"}},
		{"a disabled module's section", map[string]string{"alpha": "x: 1\n", "beta": "x: 1\n"}, nil},
		{"the ConfigMap enables it", map[string]string{"alpha": "x: 1\n", "beta": "x: 2\n", "betaEnabled": "true"}, []string{"beta"}},
	}
	for _, s := range steps {
		asked = nil
		if _, _, _, ok, err := u.op.steps.checks.set(t.Context(), s.data, ""); err != nil || !ok {
			t.Fatalf("%s: ok %v, err %v", s.name, ok, err)
		}
		if !slices.Equal(asked, s.asked) {
			t.Fatalf("%s: checks run for %v, want %v", s.name, asked, s.asked)
		}
	}
}

// An edit whose checks keep seeing a new tree adopted is checked again
// until a tree stays, not refused; a check cut short by a shutdown is not
// a refusal (neither logged as one nor counted).
func TestSettingsChecksSettle(t *testing.T) {
	u := startUnit(t, merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\n"}, chartOnly("001-alpha")), nil, newFakeHelm(nil))
	u.op.trees.Load().Model.Modules[0].SettingsCheck = "check"
	moves := 5
	u.op.steps.checks.check = func(ctx context.Context, _ *loader.Module, _ string) error {
		if moves > 0 {
			moves--
			// a new tree adopted while the check runs
			_ = u.op.trees.Transition(func(cur *runstate.Tree) (*runstate.Tree, error) {
				next, model := *cur, *cur.Model
				next.Model = &model
				return &next, nil
			})
		}
		return ctx.Err()
	}
	data := map[string]string{"alpha": "x: 1\n"}
	if _, _, _, ok, err := u.op.steps.checks.set(t.Context(), data, ""); err != nil || !ok || moves != 0 {
		t.Fatalf("ok %v, err %v, moves left %d", ok, err, moves)
	}
	if got := u.op.trees.Load().ConfigData; !maps.Equal(got, data) {
		t.Fatalf("data held %v", got)
	}

	refused := testutil.ToFloat64(u.op.metrics.ConfigValuesErrors)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	u.op.steps.onConfigChange(ctx, map[string]string{"alpha": "x: 2\n"}, "")
	if got := testutil.ToFloat64(u.op.metrics.ConfigValuesErrors); got != refused {
		t.Fatalf("a cancelled check counted as a refusal: %v, was %v", got, refused)
	}
}
