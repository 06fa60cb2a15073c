package lifecycle

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/addonops/addon-operator/internal/executor"
)

// hookError is a failed run of a hook or an `enabled` script. Its message
// is one line without anything the script printed: that is what /status
// and /queue serve, to whoever reaches the port, and a script's output may
// hold secrets (docs/security.md, "Who sees what"). The output is in the
// log line by line already; the end of its stderr is kept for /debug,
// which answers only on the operator's own host.
type hookError struct {
	what    string // "hook 001-alpha/hooks/a.sh (beforeHelm)", "module alpha: enabled script"
	summary string // "exited 1", "timed out after 10m0s (process group killed)"
	output  string // the end of stderr, or the bad answer of an enabled script
	err     error
}

func (e *hookError) Error() string { return e.what + ": " + e.summary }

func (e *hookError) Unwrap() error { return e.err }

// HookOutput is the end of the hook's stderr (runstate.Output).
func (e *hookError) HookOutput() string { return e.output }

// newHookError summarises an executor error: the exit status, a timeout or
// a cancel, or why the script could not start; the end of stderr, which
// the executor appends to an exit error's message, becomes the output.
func newHookError(what string, err error) *hookError {
	he := &hookError{what: what, err: err}
	var exit *exec.ExitError
	switch {
	case errors.Is(err, executor.ErrTimeout), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		he.summary = firstLine(err.Error())
	case errors.As(err, &exit):
		he.summary = exit.Error() // "signal: killed"
		if code := exit.ExitCode(); code >= 0 {
			he.summary = "exited " + strconv.Itoa(code)
		}
		msg := err.Error()
		if i := strings.Index(msg, exit.Error()+": "); i >= 0 {
			he.output = msg[i+len(exit.Error())+2:]
		}
	default:
		he.summary = firstLine(err.Error())
	}
	return he
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// hookOutput is the output a hook error carries ("" for other errors).
func hookOutput(err error) string {
	var he *hookError
	if errors.As(err, &he) {
		return he.output
	}
	return ""
}

// hookFailure is the last failed run of one hook, for /debug/hooks.
type hookFailure struct {
	err    string
	output string
}

// hookFailures are the hooks' last failed runs, by hook name, for
// /debug/hooks.
type hookFailures struct {
	mu sync.Mutex
	m  map[string]hookFailure
}

// failed records a hook's failed run and returns its error.
func (f *hookFailures) failed(hook, binding string, err error) error {
	he := newHookError("hook "+hook+" ("+binding+")", err)
	f.record(hook, he)
	return he
}

// record keeps a hook's failed run.
func (f *hookFailures) record(hook string, he *hookError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]hookFailure{}
	}
	f.m[hook] = hookFailure{err: he.Error(), output: he.output}
}

// succeeded forgets a hook's last failure.
func (f *hookFailures) succeeded(hook string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, hook)
}

// get is a hook's last failure (zero when it has none).
func (f *hookFailures) get(hook string) hookFailure {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[hook]
}
