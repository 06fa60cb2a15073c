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
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive says whether pid names a process that has not finished: a zombie
// has (only its parent's wait is missing).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// the state follows the ")" that closes the command name
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] != 'Z' && b[i+2] != 'X'
}

// eventually polls cond until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readPid waits for a hook to write a pid to path and kills that process
// when the test ends, so a failing test leaves nothing running.
func readPid(t *testing.T, path string) int {
	t.Helper()
	var pid int
	eventually(t, 5*time.Second, "no pid in "+path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil || !bytes.HasSuffix(b, []byte("\n")) {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// TestNoChildOutlivesTheHook covers children a hook leaves behind: killed
// with the hook's process group once the hook exits, whether they hold
// its output or not, and without failing a hook that succeeded.
func TestNoChildOutlivesTheHook(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		capture bool
		want    string
		wantErr string
	}{
		{name: "background child after success", body: `sleep 30 >/dev/null 2>&1 & echo $! >"$PIDFILE"; exit 0`},
		{name: "background child after failure", body: `sleep 30 >/dev/null 2>&1 & echo $! >"$PIDFILE"; echo broken >&2; exit 3`,
			wantErr: "exit status 3: broken"},
		{name: "child holding stdout and stderr after success", body: `sleep 30 & echo $! >"$PIDFILE"; exit 0`},
		{name: "child holding captured stdout", capture: true, body: `echo '{}'; sleep 30 & echo $! >"$PIDFILE"`, want: "{}\n"},
		{name: "grandchild", body: `bash -c 'sleep 30 & echo $! >"$PIDFILE"; wait' & while [ ! -s "$PIDFILE" ]; do :; done`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			start := time.Now()
			out, err := Run(t.Context(), Command{Path: script(t, tt.body), Env: []string{"PIDFILE=" + pidFile},
				CaptureStdout: tt.capture, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			took := time.Since(start)
			pid := readPid(t, pidFile)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil || string(out) != tt.want {
				t.Fatalf("out = %q, err = %v", out, err)
			}
			if took > time.Second {
				t.Errorf("Run took %s: it waited for a child", took)
			}
			eventually(t, time.Second, fmt.Sprintf("child %d outlived the hook", pid), func() bool { return !alive(pid) })
		})
	}
}

// TestChildOutsideTheGroupHoldingOutput: a child that left the hook's
// process group (setsid) survives the group kill and keeps the pipes
// open; Run stops reading after pipeGrace instead of waiting for it.
func TestChildOutsideTheGroupHoldingOutput(t *testing.T) {
	defer func(d time.Duration) { pipeGrace = d }(pipeGrace)
	pipeGrace = 50 * time.Millisecond
	pidFile := filepath.Join(t.TempDir(), "pid")
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	out, err := Run(t.Context(), Command{Path: script(t, `setsid bash -c 'echo $$ >"$PIDFILE"; exec sleep 30' &
		while [ ! -s "$PIDFILE" ]; do :; done; echo done`),
		Env: []string{"PIDFILE=" + pidFile}, CaptureStdout: true, Logger: logger})
	readPid(t, pidFile)
	if err != nil || string(out) != "done\n" {
		t.Fatalf("out = %q, err = %v", out, err)
	}
	if !strings.Contains(logs.String(), "still holds its output") {
		t.Fatalf("no warning logged:\n%s", logs.String())
	}
}

func TestCancelKillsTheGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	hook := script(t, `sleep 30 & echo $! >"$PIDFILE"; wait`)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Command{Path: hook, Env: []string{"PIDFILE=" + pidFile}})
		done <- err
	}()
	pid := readPid(t, pidFile)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want canceled", err)
	}
	eventually(t, time.Second, "child outlived the canceled hook", func() bool { return !alive(pid) })
}

// TestHelperProcess is not a test: other tests run the test binary as a
// process that plays the operator (see helper).
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("EXECUTOR_TEST_HELPER")
	if mode == "" {
		t.Skip("only run as a helper process")
	}
	helpers[mode]()
	os.Exit(0)
}

// helpers are the operators a helper process can play.
var helpers = map[string]func(){
	// runs HOOK while other goroutines end their locked OS threads, so a
	// hook forked from a thread that ends would get its Pdeathsig
	"pdeathsig": func() {
		go churnThreads()
		_, err := Run(context.Background(), Command{Path: os.Getenv("HOOK")})
		fmt.Println("hook ended:", err)
		os.Exit(1)
	},
}

// churnThreads ends OS threads: a goroutine that exits while locked to
// its thread takes the thread with it.
func churnThreads() {
	for {
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(done)
		}()
		<-done
		time.Sleep(time.Millisecond)
	}
}

// helper starts the test binary as a helper process in mode.
func helper(t *testing.T, mode string, stdout io.Writer, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), append(env, "EXECUTOR_TEST_HELPER="+mode,
		// the race detector otherwise sleeps a second before exiting
		"GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")...)
	cmd.Stdout, cmd.Stderr = stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// TestHookDiesWithTheOperator SIGKILLs an operator while its hook runs.
func TestHookDiesWithTheOperator(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	op := helper(t, "pdeathsig", os.Stderr, "HOOK="+script(t, `echo $$ >`+pidFile+`; exec sleep 30`))
	pid := readPid(t, pidFile)
	// time for the churn to end threads: the thread that forked the hook
	// among them, were Run not locked to it (Run mostly sits in waitid on
	// that thread, so this guards rather than proves the lock)
	time.Sleep(100 * time.Millisecond)
	if !alive(pid) {
		t.Fatal("hook died while the operator runs: the thread that forked it ended")
	}
	if err := op.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = op.Wait()
	eventually(t, 2*time.Second, "hook outlived the operator", func() bool { return !alive(pid) })
}
