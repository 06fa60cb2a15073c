package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/addonops/addon-operator/kube"
)

// A failing run records ModuleRunFailed once per error, again after the
// module ran or with a new error; shutdown and release conflicts none.
func TestRunFailureEvents(t *testing.T) {
	t.Parallel()
	errHook := errors.New("hook 10-a.sh: exited 1\nstderr: boom")
	for _, tc := range []struct {
		name  string
		steps []error // nil: the module ran
		want  int
	}{
		{"retried with the same error", []error{errHook, errHook, errHook}, 1},
		{"same first line, other output", []error{errHook, errors.New("hook 10-a.sh: exited 1\nstderr: other")}, 1},
		{"a new error", []error{errHook, errors.New("hook 20-b.sh: exited 2")}, 2},
		{"failing again after it ran", []error{errHook, nil, errHook}, 2},
		{"shutdown", []error{fmt.Errorf("run: %w", context.Canceled)}, 0},
		{"release conflict", []error{fmt.Errorf("helm: %w", kube.ErrNotOurs)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			f := runFailures{warn: func(_ context.Context, module, reason, message string) error {
				got = append(got, module+" "+reason+" "+message)
				return nil
			}}
			for _, err := range tc.steps {
				if err == nil {
					f.clear("alpha")
					continue
				}
				f.event(t.Context(), "alpha", err)
			}
			if len(got) != tc.want {
				t.Fatalf("%d Events %v, want %d", len(got), got, tc.want)
			}
			if tc.want > 0 && !slices.Contains(got, "alpha ModuleRunFailed module alpha: "+errHook.Error()) {
				t.Fatalf("Events %v: the error is not named", got)
			}
		})
	}
}

// A failure recorded on the values ConfigMap, the module having no Module
// object yet, is recorded once more when the object is there, and no more.
func TestRunFailureEventReachesTheObject(t *testing.T) {
	t.Parallel()
	errHook := errors.New("hook 10-a.sh: exited 1")
	onObject := false
	var got []bool // where each Event went: on the object
	f := runFailures{
		warn:     func(context.Context, string, string, string) error { got = append(got, onObject); return nil },
		onObject: func(string) bool { return onObject },
	}
	f.event(t.Context(), "alpha", errHook) // the first run: no object yet
	f.event(t.Context(), "alpha", errHook) // retried, still none
	onObject = true                        // a pass wrote the object
	f.event(t.Context(), "alpha", errHook)
	f.event(t.Context(), "alpha", errHook)
	if !slices.Equal(got, []bool{false, true}) {
		t.Fatalf("Events on the object: %v, want [false true]", got)
	}
}

// An Event the API server refused (a timeout, a restart) is tried again
// at the next failure, and recorded once.
func TestRunFailureEventRetriedWhenNotRecorded(t *testing.T) {
	t.Parallel()
	errHook := errors.New("hook 10-a.sh: exited 1")
	refuse := true
	var tried, recorded int
	f := runFailures{warn: func(context.Context, string, string, string) error {
		tried++
		if refuse {
			return errors.New("the server is currently unable to handle the request")
		}
		recorded++
		return nil
	}}
	f.event(t.Context(), "alpha", errHook)
	refuse = false
	f.event(t.Context(), "alpha", errHook)
	f.event(t.Context(), "alpha", errHook)
	if tried != 2 || recorded != 1 {
		t.Fatalf("tried %d, recorded %d; want 2 and 1", tried, recorded)
	}
}
