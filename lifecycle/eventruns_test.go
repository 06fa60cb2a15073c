package lifecycle

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/addonops/addon-operator/loader"
)

// fakeFollowUps records what event hooks' results ask of the steps.
type fakeFollowUps struct {
	mu    sync.Mutex
	asked []string
}

func (f *fakeFollowUps) queueReloadAll() { f.record("reload all") }

func (f *fakeFollowUps) queueModuleRun(module string) { f.record("run " + module) }

func (f *fakeFollowUps) converged() bool { return true }

func (f *fakeFollowUps) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, s)
}

var _ followUps = (*fakeFollowUps)(nil)

// An event hook's result reaches the steps through followUps alone: a
// global hook's change of global values asks for a reload, a module hook's
// change of its values for the module's run, no change for nothing.
func TestEventHookAsksForFollowUps(t *testing.T) {
	const config = `{"configVersion":"v1","schedule":[{"name":"yearly","crontab":"0 0 0 1 1 *"}]}`
	hook := func(patch string) string {
		return "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '" + config + "'; exit 0; fi\n" +
			"[ -n '" + patch + "' ] && echo '" + patch + "' > \"$VALUES_JSON_PATCH_PATH\"\nexit 0\n"
	}
	files := merged(map[string]string{
		"modules/values.yaml":            "alphaEnabled: true\n",
		"global-hooks/changes.sh":        hook(`[{"op":"add","path":"/global/x","value":1}]`),
		"global-hooks/quiet.sh":          hook(""),
		"modules/001-alpha/hooks/one.sh": hook(`[{"op":"add","path":"/alpha/x","value":1}]`),
	}, chartOnly("001-alpha"))
	dir := tree(t, files)
	op := New(Config{ModulesDir: dir + "/modules", GlobalHooksDir: dir + "/global-hooks", Logger: quiet(),
		RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond},
		newFakeConfig(nil), newFakeHelm(nil), loader.New(loader.WithLogger(quiet())))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	var runErr error
	go func() { runErr = op.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(10 * time.Second)
	for !op.Ready() || op.Queues().Main().Len() > 0 {
		select {
		case <-done:
			t.Fatalf("Run: %v", runErr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no convergence: %+v", op.Status())
		}
		time.Sleep(time.Millisecond)
	}
	model, _ := op.trees.Current()
	byName := map[string]*loader.Hook{}
	for _, h := range append(slices.Clone(model.Global.Hooks), model.Module("alpha").Hooks...) {
		byName[h.Name] = h
	}
	tests := []struct {
		hook string
		want []string
	}{
		{"changes.sh", []string{"reload all"}},
		{"quiet.sh", nil},
		{"001-alpha/hooks/one.sh", []string{"run alpha"}},
	}
	for _, tt := range tests {
		t.Run(tt.hook, func(t *testing.T) {
			h := byName[tt.hook]
			if h == nil {
				t.Fatalf("no hook %s in %v", tt.hook, byName)
			}
			f := &fakeFollowUps{}
			steps := op.bind.steps
			op.bind.steps = f // nothing else runs a hook now: no event source fires
			defer func() { op.bind.steps = steps }()
			if err := op.bind.runEventHook(t.Context(), h, "yearly", []map[string]any{{"binding": "yearly"}}, false); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f.asked, tt.want) {
				t.Fatalf("asked %v, want %v", f.asked, tt.want)
			}
		})
	}
}
