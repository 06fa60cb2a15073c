package runstate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/addonops/addon-operator/internal/testtree"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// closed reports whether ch is closed, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestNotifierWakesOncePerBurst(t *testing.T) {
	t.Parallel()
	var n notifier
	v0, ch := n.changed()
	if closed(ch) {
		t.Fatal("closed before any change")
	}
	n.bump()
	n.bump()
	if !closed(ch) {
		t.Fatal("not closed after a change")
	}
	v1, ch1 := n.changed()
	if v1 != v0+2 || closed(ch1) {
		t.Fatalf("after two changes: version %d (from %d), closed %v", v1, v0, closed(ch1))
	}
}

func model(t *testing.T, modules ...string) *loader.Model {
	t.Helper()
	files := map[string]string{"global-hooks/.keep": ""}
	for i, m := range modules {
		files[fmt.Sprintf("modules/%03d-%s/Chart.yaml", i+1, m)] = "name: " + m + "\nversion: 0.1.0\n"
		files[fmt.Sprintf("modules/%03d-%s/openapi/config-values.yaml", i+1, m)] = "type: object\nproperties:\n  x: {type: integer}\n"
	}
	dir := testtree.New(t, files)
	m, err := loader.New(loader.WithHookConfigs(false)).Load(t.Context(), dir, dir+"/modules", dir+"/global-hooks")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTreesAnnounceReplacementsOnly(t *testing.T) {
	t.Parallel()
	m := model(t, "alpha")
	store, err := Admit(m, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var trees Trees
	_, ch := trees.Changed()
	trees.Start(&Tree{Model: m, Store: store, ConfigVersion: "5"})
	if !closed(ch) {
		t.Fatal("Start did not announce the first tree")
	}

	steps := []struct {
		name     string
		do       func() error
		announce bool
	}{
		{"a transition that keeps the tree", func() error {
			return trees.Transition(func(*Tree) (*Tree, error) { return nil, nil })
		}, false},
		{"a failed transition", func() error {
			err := trees.Transition(func(cur *Tree) (*Tree, error) { return cur, errors.New("no") })
			if err == nil {
				return errors.New("the error was lost")
			}
			return nil
		}, false},
		{"older ConfigMap data", func() error {
			_, ok, err := trees.SetConfig(map[string]string{"alpha": "x: 1\n"}, "4", nil)
			if ok {
				return errors.New("older data taken")
			}
			return err
		}, false},
		{"newer ConfigMap data", func() error {
			_, ok, err := trees.SetConfig(map[string]string{"alpha": "x: 1\n"}, "6", nil)
			if !ok {
				return errors.New("newer data skipped")
			}
			return err
		}, true},
		{"data checked against another tree", func() error {
			_, _, err := trees.SetConfig(map[string]string{"alpha": "x: 2\n"}, "7", model(t, "alpha"))
			if !errors.Is(err, ErrTreeMoved) {
				return fmt.Errorf("got %v, want ErrTreeMoved", err)
			}
			return nil
		}, false},
		{"data the schema refuses", func() error {
			_, _, err := trees.SetConfig(map[string]string{"alphaEnabled": "true", "alpha": "x: many\n"}, "8", nil)
			if err == nil || !strings.Contains(err.Error(), "schemas refuse") {
				return fmt.Errorf("got %v, want a refusal", err)
			}
			return nil
		}, false},
	}
	for _, s := range steps {
		v, ch := trees.Changed()
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if closed(ch) != s.announce {
			t.Errorf("%s: announced %v, want %v", s.name, closed(ch), s.announce)
		}
		if v2, _ := trees.Changed(); (v2 != v) != s.announce {
			t.Errorf("%s: version %d -> %d", s.name, v, v2)
		}
	}
	if got := trees.Load().ConfigVersion; got != "6" {
		t.Errorf("running data is version %q, want 6", got)
	}
}

type outputErr struct{ out string }

func (e outputErr) Error() string      { return "hook failed" }
func (e outputErr) HookOutput() string { return e.out }

func TestModulesSetStateAndAnnounce(t *testing.T) {
	t.Parallel()
	r := NewModules()
	r.Reset(model(t, "alpha", "beta"))
	cases := []struct {
		name                 string
		err                  error
		lastErr, out, reason string
	}{
		{"ok", nil, "", "", ""},
		{"hook output kept for /debug", fmt.Errorf("run: %w", outputErr{"boom"}), "run: hook failed", "boom", ""},
		{"terminal reason", queue.Terminal("ValuesRefused", errors.New("bad")), "", "", "ValuesRefused"},
	}
	for _, c := range cases {
		_, ch := r.Changed()
		r.SetState("alpha", StateFailed, c.err)
		if !closed(ch) {
			t.Errorf("%s: SetState did not announce", c.name)
		}
		st := r.Get("alpha")
		if c.lastErr != "" && st.LastError != c.lastErr {
			t.Errorf("%s: LastError %q, want %q", c.name, st.LastError, c.lastErr)
		}
		if st.LastOutput != c.out || st.Reason != c.reason {
			t.Errorf("%s: output %q reason %q, want %q %q", c.name, st.LastOutput, st.Reason, c.out, c.reason)
		}
	}
	if got := r.Get("beta").State; got != StateDisabled {
		t.Errorf("beta is %s after Reset, want Disabled", got)
	}
	_, ch := r.Changed()
	_ = r.Get("alpha")
	_ = r.All()
	if closed(ch) {
		t.Error("a read announced a change")
	}
}

// A retry's run keeps the error it retries until a run ends: /status, the
// web view and the Module object do not lose it between two attempts.
func TestModulesRunningKeepsLastError(t *testing.T) {
	t.Parallel()
	r := NewModules()
	r.Reset(model(t, "alpha"))
	steps := []struct {
		state         ModuleState
		err           error
		lastErr, want string
	}{
		{StateFailed, fmt.Errorf("render: %w", outputErr{"boom"}), "render: hook failed", "boom"},
		{StateRunning, nil, "render: hook failed", "boom"},
		{StateFailed, errors.New("again"), "again", ""},
		{StateRunning, nil, "again", ""},
		{StateFailed, fmt.Errorf("run: %w", context.Canceled), "again", ""},
		{StateReady, nil, "", ""},
		{StateRunning, nil, "", ""},
	}
	for i, s := range steps {
		r.SetState("alpha", s.state, s.err)
		st := r.Get("alpha")
		if st.State != s.state || st.LastError != s.lastErr || st.LastOutput != s.want {
			t.Errorf("step %d (%s): state %s error %q output %q, want %s %q %q", i, s.state, st.State, st.LastError, st.LastOutput, s.state, s.lastErr, s.want)
		}
	}
	r.SetState("alpha", StateFailed, queue.Terminal("ValuesRefused", errors.New("bad")))
	r.SetState("alpha", StateRunning, nil)
	if st := r.Get("alpha"); st.Reason != "" || st.LastError == "" {
		t.Errorf("a run after a terminal failure: reason %q error %q, want no reason and the error kept", st.Reason, st.LastError)
	}
}

func TestModuleSettings(t *testing.T) {
	t.Parallel()
	m := model(t, "alpha")
	mod := m.Module("alpha")
	cases := []struct {
		data    map[string]string
		maint   bool
		drift   string
		wantErr string
	}{
		{nil, false, DriftCorrect, ""},
		{map[string]string{"alphaMaintenance": NoResourceReconciliation, "alphaDrift": DriftWarn}, true, DriftWarn, ""},
		{map[string]string{"alphaMaintenance": Managed}, false, DriftCorrect, ""},
		{map[string]string{"alphaMaintenance": "Sometimes"}, false, DriftCorrect, "alphaMaintenance"},
		{map[string]string{"alphaDrift": "fix"}, false, "", "alphaDrift"},
	}
	for _, c := range cases {
		err := checkSettings(m, c.data)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%v: got %v, want an error naming %s", c.data, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", c.data, err)
		}
		if got, _ := Maintenance(c.data, mod); got != c.maint {
			t.Errorf("%v: maintenance %v", c.data, got)
		}
		if got, _ := DriftMode(c.data, mod, DriftCorrect); got != c.drift {
			t.Errorf("%v: drift mode %q", c.data, got)
		}
	}
	if got := MaintenanceChanged(m, nil, map[string]string{"alphaMaintenance": NoResourceReconciliation}); len(got) != 1 || got[0] != "alpha" {
		t.Errorf("MaintenanceChanged = %v", got)
	}
}

func TestNewerVersion(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v, than string
		want    bool
	}{{"2", "1", true}, {"1", "2", false}, {"1", "1", false}, {"", "5", true}, {"5", "", true}, {"x", "y", true}, {"x", "x", false}} {
		if got := NewerVersion(c.v, c.than); got != c.want {
			t.Errorf("NewerVersion(%q, %q) = %v", c.v, c.than, got)
		}
	}
}
