package hookrun

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/addonops/addon-operator/internal/executor"
	"github.com/addonops/addon-operator/internal/testtree"
)

// NewHookError: one line that says how a script failed, its output apart.
func TestHookErrorSummary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, script, summary, output string
	}{
		{"exit status", "#!/bin/sh\necho 'user=admin password=x' >&2\nexit 3\n", "exited 3", "user=admin password=x"},
		{"signal", "#!/bin/sh\necho bye >&2\nkill -9 $$\n", "signal: killed", "bye"},
		{"timeout", "#!/bin/sh\necho slow >&2\nsleep 5\n", "timed out after 200ms (process group killed)", ""},
		{"not executable", "echo no shebang, no mode\n", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := testtree.New(t, map[string]string{"s": tt.script})
			_, err := executor.Run(t.Context(), executor.Command{Path: filepath.Join(dir, "s"), Timeout: 200 * time.Millisecond, Logger: quiet()})
			if err == nil {
				t.Fatal("no error")
			}
			he := NewHookError("hook s (beforeHelm)", err)
			if strings.Contains(he.Error(), "\n") || (tt.output != "" && strings.Contains(he.Error(), tt.output)) {
				t.Fatalf("message %q carries the output", he.Error())
			}
			if tt.summary != "" && he.Error() != "hook s (beforeHelm): "+tt.summary {
				t.Fatalf("message %q, want the summary %q", he.Error(), tt.summary)
			}
			if he.HookOutput() != tt.output {
				t.Fatalf("output %q, want %q", he.HookOutput(), tt.output)
			}
			if !errors.Is(he, err) {
				t.Fatal("the executor's error is not wrapped")
			}
		})
	}
}

// Failures keeps each hook's last failure until it succeeds, and a hook's
// failure is its own.
func TestFailures(t *testing.T) {
	t.Parallel()
	var f Failures
	if got := f.Get("a"); got != (Failure{}) {
		t.Fatalf("no runs yet: %+v", got)
	}
	canceled := fmt.Errorf("run: %w\nsecond line", context.Canceled)
	err := f.Failed("a", "schedule", canceled)
	if err.Error() != "hook a (schedule): run: context canceled" || !errors.Is(err, context.Canceled) {
		t.Fatalf("err %q", err)
	}
	f.Failed("b", "beforeHelm", errors.New("b failed"))
	f.succeeded("b")
	if got := f.Get("a"); got.Err != err.Error() || got.Output != "" {
		t.Fatalf("a: %+v", got)
	}
	if got := f.Get("b"); got != (Failure{}) {
		t.Fatalf("b succeeded: %+v", got)
	}
}
