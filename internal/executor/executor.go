package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrTimeout says the process ran longer than its timeout and was killed.
var ErrTimeout = errors.New("timed out")

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
}

// waitDelay bounds how long Wait waits for output pipes that a killed
// process's orphaned children still hold open.
const waitDelay = 2 * time.Second

// Run runs the command and returns its captured stdout (when asked). A
// non-zero exit is an error that carries the last lines of stderr.
func Run(ctx context.Context, c Command) ([]byte, error) {
	logger := c.Logger
	if logger == nil {
		logger = slog.Default()
	}
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, c.Path, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = append(BaseEnv(), c.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// the whole group: a shell hook's children die with it
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = waitDelay

	var stdout bytes.Buffer
	tail := &tailWriter{max: 2048}
	stderrLog := newLineLogger(logger, "stderr")
	cmd.Stderr = io.MultiWriter(stderrLog, tail)
	var stdoutLog *lineLogger
	if c.CaptureStdout {
		cmd.Stdout = &stdout
	} else {
		stdoutLog = newLineLogger(logger, "stdout")
		cmd.Stdout = stdoutLog
	}
	err := cmd.Run()
	stderrLog.Flush()
	if stdoutLog != nil {
		stdoutLog.Flush()
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && c.Timeout > 0 {
			return nil, fmt.Errorf("%w after %s (process group killed)", ErrTimeout, c.Timeout)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("canceled (process group killed): %w", ctx.Err())
		}
		if msg := strings.TrimSpace(tail.String()); msg != "" {
			return nil, fmt.Errorf("%w: %s", err, msg)
		}
		return nil, err
	}
	return stdout.Bytes(), nil
}

// secretVars are the operator's own settings that hooks must not see: they
// name credential files or hold secrets.
var secretVars = map[string]bool{
	"GIT_SSH_KEY_FILE": true, "GIT_KNOWN_HOSTS_FILE": true, "GIT_USERNAME": true,
	"GIT_PASSWORD_FILE": true, "GIT_TOKEN_FILE": true, "GIT_WEBHOOK_SECRET_FILE": true,
	"GIT_VERIFY_KEYS_DIR": true, "GIT_URL": true,
}

// hookVars are set per run; stale values from the operator's own
// environment must not leak into a hook.
var hookVars = map[string]bool{
	"BINDING_CONTEXT_PATH": true, "WORKING_DIR": true, "CONFIG_VALUES_PATH": true, "VALUES_PATH": true,
	"CONFIG_VALUES_JSON_PATCH_PATH": true, "VALUES_JSON_PATCH_PATH": true, "MODULE_ENABLED_RESULT": true,
}

// BaseEnv is the operator's environment without its credential settings,
// anything that looks like a secret, or hook variables.
func BaseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		upper := strings.ToUpper(name)
		if secretVars[name] || hookVars[name] ||
			strings.Contains(upper, "PASSWORD") || strings.Contains(upper, "SECRET") || strings.Contains(upper, "TOKEN") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// lineLogger logs each complete line it is written.
type lineLogger struct {
	mu     sync.Mutex
	logger *slog.Logger
	stream string
	buf    []byte
}

func newLineLogger(l *slog.Logger, stream string) *lineLogger {
	return &lineLogger{logger: l, stream: stream}
}

func (w *lineLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *lineLogger) emit(line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	w.logger.Info(string(line), "output", w.stream)
}

// Flush logs a last line that had no newline.
func (w *lineLogger) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.emit(w.buf)
	w.buf = nil
}

// tailWriter keeps the last max bytes written.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
