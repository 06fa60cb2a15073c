package hookrun

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/addonops/addon-operator/internal/executor"
)

// HookError is a failed run of a hook or an `enabled` script. Its message
// is one line without anything the script printed: that is what /status
// and /queue serve, to whoever reaches the port, and a script's output may
// hold secrets (docs/security.md, "Who sees what"). The output is in the
// log line by line already; the end of its stderr is kept for /debug,
// which answers only on the operator's own host.
type HookError struct {
	what    string // "hook 001-alpha/hooks/a.sh (beforeHelm)", "module alpha: enabled script"
	summary string // "exited 1", "timed out after 10m0s (process group killed)"
	output  string // the end of stderr, or the bad answer of an enabled script
	err     error
}

func (e *HookError) Error() string { return e.what + ": " + e.summary }

func (e *HookError) Unwrap() error { return e.err }

// HookOutput is the end of the hook's stderr (runstate.Output).
func (e *HookError) HookOutput() string { return e.output }

// NewHookError summarises an executor error of the run what names: the
// exit status, a timeout or a cancel, or why the script could not start;
// the end of stderr, which the executor appends to an exit error's
// message, becomes the output.
func NewHookError(what string, err error) *HookError {
	he := &HookError{what: what, err: err}
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
	var he *HookError
	if errors.As(err, &he) {
		return he.output
	}
	return ""
}

// Failure is the last failed run of one hook, for /debug/hooks: its
// one-line error and its output.
type Failure struct {
	Err    string
	Output string
}

// Failures are the hooks' last failed runs, by hook name, for
// /debug/hooks. The zero value is ready to use.
type Failures struct {
	mu sync.Mutex
	m  map[string]Failure
}

// Failed records a hook's failed run for binding and returns its
// HookError.
func (f *Failures) Failed(hook, binding string, err error) error {
	he := NewHookError("hook "+hook+" ("+binding+")", err)
	f.record(hook, he)
	return he
}

// record keeps a hook's failed run.
func (f *Failures) record(hook string, he *HookError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]Failure{}
	}
	f.m[hook] = Failure{Err: he.Error(), Output: he.output}
}

// succeeded forgets a hook's last failure.
func (f *Failures) succeeded(hook string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, hook)
}

// Get is a hook's last failure (zero when it has none).
func (f *Failures) Get(hook string) Failure {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[hook]
}
