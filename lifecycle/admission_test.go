package lifecycle

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/addonops/addon-operator/preview"

	"github.com/addonops/addon-operator/loader"
)

// Admission is one function with four callers: start-up, a new tree
// (CheckTree and adopt), a ConfigMap edit and previews refuse the same
// data with admit's words.
func TestAdmissionOneFunctionFourCallers(t *testing.T) {
	schema := withPrefix("modules/001-alpha", map[string]string{
		"openapi/config-values.yaml": "type: object\nproperties:\n  x: {type: integer}\n",
	})
	files := merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\n"}, chartOnly("001-alpha"), schema)
	bad := []struct {
		name, want string
		data       map[string]string
	}{
		{"maintenance key", "the ConfigMap does not suit the tree", map[string]string{"alphaMaintenance": "Sometimes"}},
		{"schema", "the tree's schemas refuse the ConfigMap", map[string]string{"alpha": "x: many\n"}},
	}
	ld := func() *loader.Loader { return loader.New(loader.WithLogger(quiet()), loader.WithHookConfigs(false)) }
	callers := []struct {
		name  string
		admit func(t *testing.T, data map[string]string) string // the refusal, "" when admitted
	}{
		{"start-up", func(t *testing.T, data map[string]string) string {
			dir := tree(t, files)
			op := New(Config{ModulesDir: dir + "/modules", GlobalHooksDir: dir + "/global-hooks", Logger: quiet()}, newFakeConfig(data), newFakeHelm(nil), ld())
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			go func() {
				for ctx.Err() == nil && !op.Ready() {
					time.Sleep(time.Millisecond)
				}
				cancel() // admitted and converged
			}()
			if err := op.Run(ctx); err != nil {
				return err.Error()
			}
			return ""
		}},
		{"a new tree: CheckTree", func(t *testing.T, data map[string]string) string {
			// the copy the operator holds is judged: here the refused
			// data was never seen by the running operator, which holds
			// good data, so CheckTree is given the bad data at start-up
			// of a standby (no copy yet: it reads the ConfigMap)
			dir := tree(t, files)
			op := New(Config{Logger: quiet()}, newFakeConfig(data), newFakeHelm(nil), ld())
			if _, err := op.CheckTree(t.Context(), dir, "modules", "global-hooks"); err != nil {
				return err.Error()
			}
			return ""
		}},
		{"a new tree: adopt", func(t *testing.T, data map[string]string) string {
			// the running tree has no schema and no alpha module with
			// maintenance keys; the new one brings both
			u := startUnit(t, map[string]string{"modules/values.yaml": "{}\n"}, data, newFakeHelm(nil))
			for p, c := range files {
				full := filepath.Join(u.dir, p)
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			u.op.TreeChanged(Revision{})
			u.until("the tree judged", func() bool { return u.op.Status().TreeError != "" || len(u.op.Status().Modules) == 1 })
			return u.op.Status().TreeError
		}},
		{"a ConfigMap edit", func(t *testing.T, data map[string]string) string {
			u := startUnit(t, files, nil, newFakeHelm(nil))
			var refused string
			before := maps.Clone(u.op.trees.Load().ConfigData)
			ch, ok, err := u.op.trees.SetConfig(data, "", nil)
			if err != nil {
				refused = err.Error()
			}
			after := maps.Clone(u.op.trees.Load().ConfigData)
			if refused != "" && (!maps.Equal(before, after) || ok || !ch.Empty()) {
				t.Fatalf("refused data was adopted: %v", after)
			}
			return refused
		}},
		{"a preview", func(t *testing.T, data map[string]string) string {
			dir := tree(t, files)
			if _, err := preview.Render(t.Context(), preview.Options{Loader: ld(), Root: dir, ModulesDir: dir + "/modules", GlobalHooksDir: dir + "/global-hooks", Config: data, Namespace: "default", Logger: quiet()}); err != nil {
				return err.Error()
			}
			return ""
		}},
	}
	for _, c := range callers {
		for _, b := range bad {
			t.Run(c.name+"/"+b.name, func(t *testing.T) {
				if got := c.admit(t, b.data); !strings.Contains(got, b.want) {
					t.Fatalf("refusal %q, want one saying %q", got, b.want)
				}
			})
		}
		t.Run(c.name+"/good data", func(t *testing.T) {
			if got := c.admit(t, map[string]string{"alpha": "x: 1\n", "alphaMaintenance": NoResourceReconciliation}); got != "" {
				t.Fatalf("good data refused: %s", got)
			}
		})
	}
}

// CheckTree and adopt judge one copy of the ConfigMap: the one the running
// store holds, not a fresh read that the operator has not seen.
func TestAdmissionJudgesTheRunningCopy(t *testing.T) {
	files := merged(map[string]string{"modules/values.yaml": "alphaEnabled: true\n"}, chartOnly("001-alpha"))
	u := startUnit(t, files, nil, newFakeHelm(nil))
	// an edit the watch has not delivered
	u.config.mu.Lock()
	u.config.data = map[string]string{"alphaMaintenance": "Sometimes"}
	u.config.mu.Unlock()
	if _, err := u.op.CheckTree(t.Context(), u.dir, "modules", "global-hooks"); err != nil {
		t.Fatalf("CheckTree judged data the operator has not seen: %v", err)
	}
}
