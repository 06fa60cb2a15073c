package hookrun

import (
	"errors"
	"testing"

	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
)

// A readiness hook's run is its module's readiness: success is ready, a
// failure is not, with module-sdk's error message and the run's error as
// one line each; other hooks' runs change nothing.
func TestReadinessObserved(t *testing.T) {
	t.Parallel()
	f := newFixture(t, baseTree(nil))
	ready := &loader.Hook{Name: "001-alpha/hooks/batch-readiness", Module: "alpha", Args: []string{"hook", loader.BatchReadyID}}
	other := &loader.Hook{Name: "001-alpha/hooks/batch:x:0", Module: "alpha", Args: []string{"hook", "run", "0"}}
	exit := func(stderr string) error {
		return &HookError{what: "hook " + ready.Name + " (schedule)", summary: "exited 1", output: stderr, err: errors.New("exit status 1")}
	}
	steps := []struct {
		name string
		hook *loader.Hook
		err  error
		want *runstate.Readiness // nil: no readiness
	}{
		{"another hook", other, nil, nil},
		{"a pass", ready, nil, &runstate.Readiness{Ready: true}},
		{"module-sdk's error line", ready, exit("log line\n{\"message\":\"execute: get module resource: not found\"}"),
			&runstate.Readiness{Message: "execute: get module resource: not found", Error: "hook 001-alpha/hooks/batch-readiness (schedule): exited 1"}},
		{"other output stays off /status", ready, exit("password=hunter2"),
			&runstate.Readiness{Error: "hook 001-alpha/hooks/batch-readiness (schedule): exited 1"}},
		{"another error", ready, errors.New("first\nsecond"), &runstate.Readiness{Error: "first"}},
	}
	for _, s := range steps {
		f.r.observeReadiness(s.hook, s.err)
		got := f.modules.Get("alpha").Readiness
		if s.want == nil {
			if got != nil {
				t.Fatalf("%s: readiness %+v", s.name, got)
			}
			continue
		}
		if got == nil || got.Ready != s.want.Ready || got.Message != s.want.Message || got.Error != s.want.Error || got.Checked.IsZero() {
			t.Fatalf("%s: readiness %+v, want %+v", s.name, got, s.want)
		}
	}
}
