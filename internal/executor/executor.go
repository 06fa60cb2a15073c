package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// ErrTimeout says the process ran longer than its timeout and was killed.
var ErrTimeout = errors.New("timed out")

// DefaultOutputLimit is Command.OutputLimit when it is zero.
const DefaultOutputLimit = 64 << 10

// DefaultLineLimit is Command.LineLimit when it is zero: with
// DefaultOutputLimit, one run logs at most ~128 MiB per stream in the
// worst case, and far less for ordinary lines (docs/security.md, "Limits").
const DefaultLineLimit = 1000

// Command is one process to run.
type Command struct {
	Path string
	Args []string
	Dir  string
	// Env is added to the base environment (NAME=value).
	Env []string
	// Timeout bounds the run; zero means no bound beyond the context.
	Timeout time.Duration
	// CaptureStdout returns stdout instead of logging it.
	CaptureStdout bool
	// Logger receives output lines; it should carry the hook's name.
	Logger *slog.Logger
	// OutputLimit bounds what is kept of each logged line and of captured
	// stdout: its first and its last OutputLimit bytes, with a
	// "… N bytes dropped …" marker between them. Zero means
	// DefaultOutputLimit.
	OutputLimit int
	// LineLimit bounds how many lines of each stream one run logs; the
	// rest are counted in one last record. Zero means DefaultLineLimit.
	LineLimit int
	// Usage, when set, receives the process's CPU times and peak RSS once
	// it has exited (for the hook run metrics, docs/operator.md "Metrics").
	Usage *Usage
}

// Usage is what the kernel accounted to one run's process.
type Usage struct {
	User, Sys   time.Duration
	MaxRSSBytes int64
}

// stderrTail is how much of the end of stderr an error carries.
const stderrTail = 2048

// Run runs the command and returns its captured stdout (when asked). A
// non-zero exit is an error that carries the last lines of stderr.
//
// The process runs in its own process group, which is killed (SIGKILL)
// on timeout or cancel and, in any case, once the process has exited, so
// that nothing the hook started outlives it. The process gets SIGKILL if
// the operator dies first (Pdeathsig); its own children do not, as the
// kernel clears that setting on fork, but when the operator is PID 1 of
// its container they die with it anyway.
func Run(ctx context.Context, c Command) ([]byte, error) {
	// Pdeathsig fires when the OS thread that forked the child ends, not
	// when the operator does: the runtime ends a thread whose locked
	// goroutine exits, and this goroutine could be moved off the forking
	// thread while the hook runs. Holding the thread until the hook is
	// reaped keeps it alive; Run is then the only goroutine on it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	logger := c.Logger
	if logger == nil {
		logger = slog.Default()
	}
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("not started: %w", err)
	}
	limit := c.OutputLimit
	if limit <= 0 {
		limit = DefaultOutputLimit
	}
	maxLines := c.LineLimit
	if maxLines <= 0 {
		maxLines = DefaultLineLimit
	}
	out, err := newStreams(logger, c.CaptureStdout, limit, maxLines)
	if err != nil {
		return nil, err
	}
	env := append(BaseEnv(), c.Env...)
	cmd, short := command(c, env, true)
	cmd.Stdout, cmd.Stderr = out.stdoutW, out.stderrW
	err = startTracked(cmd)
	if err != nil && short {
		// what env would have done differently (docs/operator.md, "How
		// hooks run"): the kernel and env start it, and say why not
		cmd, _ = command(c, env, false)
		cmd.Stdout, cmd.Stderr = out.stdoutW, out.stderrW
		err = startTracked(cmd)
	}
	if err != nil {
		out.abort()
		return nil, err
	}
	out.read()
	waitErr := waitGroupLeader(ctx, cmd)
	out.finish()
	if ps := cmd.ProcessState; c.Usage != nil && ps != nil {
		*c.Usage = Usage{User: ps.UserTime(), Sys: ps.SystemTime()}
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			c.Usage.MaxRSSBytes = ru.Maxrss * 1024 // KiB on Linux
		}
	}
	if waitErr != nil {
		return nil, runError(ctx, c.Timeout, waitErr, out.stderrTail())
	}
	return out.captured(), nil
}

// command is the process of c: a `#!/usr/bin/env NAME` script started as
// NAME when short allows it (directStart); direct says whether it is.
func command(c Command, env []string, short bool) (cmd *exec.Cmd, direct bool) {
	cmd = exec.Command(c.Path, c.Args...)
	if short {
		if interp, argv, ok := directStart(c.Path, env); ok {
			cmd.Path, cmd.Args, direct = interp, append(argv, c.Args...), true
		}
	}
	cmd.Dir, cmd.Env = c.Dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd, direct
}

// runError says why a run failed: its timeout, a cancel, or the exit
// with the end of stderr.
func runError(ctx context.Context, timeout time.Duration, err error, stderr string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && timeout > 0 {
		return fmt.Errorf("%w after %s (process group killed)", ErrTimeout, timeout)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("canceled (process group killed): %w", ctx.Err())
	}
	if msg := strings.TrimSpace(stderr); msg != "" {
		return fmt.Errorf("%w: %s", err, msg)
	}
	return err
}
