package executor

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"
)

// hooks are the processes Run started and has not reaped yet. The reaper
// (ReapOrphans) must leave them to exec.Cmd.Wait: reaping one itself
// would make that Wait fail with ECHILD.
var hooks = struct {
	// starting is held for reading from fork to registration and for
	// writing while the reaper looks for orphans, so the reaper never
	// sees a hook that is not registered yet.
	starting sync.RWMutex
	mu       sync.Mutex
	running  map[int]bool
	// reaped wakes the reaper after Run reaps a hook: an exited hook
	// waiting for its Wait hides the orphans behind it (see reapOrphans).
	reaped chan struct{}
}{running: map[int]bool{}, reaped: make(chan struct{}, 1)}

// startTracked starts cmd and registers its process as a hook.
func startTracked(cmd *exec.Cmd) error {
	hooks.starting.RLock()
	defer hooks.starting.RUnlock()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	hooks.mu.Lock()
	hooks.running[cmd.Process.Pid] = true
	hooks.mu.Unlock()
	return nil
}

// untrack forgets a reaped hook and wakes the reaper.
func untrack(pid int) {
	hooks.mu.Lock()
	delete(hooks.running, pid)
	hooks.mu.Unlock()
	select {
	case hooks.reaped <- struct{}{}:
	default:
	}
}

func isHook(pid int) bool {
	hooks.mu.Lock()
	defer hooks.mu.Unlock()
	return hooks.running[pid]
}

// group is a hook's process group, named by the hook's pid.
type group struct {
	mu     sync.Mutex
	pgid   int
	reaped bool
}

// kill SIGKILLs every process in the group. It does nothing once the
// leader is reaped: its pid, and so the group id, may then be reused.
func (g *group) kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.reaped {
		// ESRCH: nobody left, which is what we want
		_ = syscall.Kill(-g.pgid, syscall.SIGKILL)
	}
}

// killBeforeReap kills the group one last time and stops later kills:
// the caller is about to reap the leader.
func (g *group) killBeforeReap() {
	g.mu.Lock()
	defer g.mu.Unlock()
	_ = syscall.Kill(-g.pgid, syscall.SIGKILL)
	g.reaped = true
}

// waitGroupLeader waits for the hook to exit, killing its process group
// when ctx ends first and in any case once the hook exited, then reaps it.
// The group is killed while the exited hook is still a zombie, so its pid
// cannot have been reused for another group yet.
func waitGroupLeader(ctx context.Context, cmd *exec.Cmd) error {
	pid := cmd.Process.Pid
	g := &group{pgid: pid}
	stop := context.AfterFunc(ctx, g.kill)
	defer stop()
	exitErr := waitExited(pid)
	g.killBeforeReap()
	err := cmd.Wait()
	untrack(pid)
	if exitErr != nil {
		return fmt.Errorf("wait for exit: %w", exitErr)
	}
	return err
}

// siginfo is the part of the kernel's siginfo_t that waitid fills for a
// child, padded to the kernel's 128 bytes.
type siginfo struct {
	signo, errno, code int32
	_                  [is64bit]int32 // the union is 8-byte aligned
	pid                int32
	_                  [128 - (4+is64bit)*4]byte
}

const is64bit = int(^uint(0) >> 63)

// waitid calls waitid(2) on the children idtype and id select, retrying
// when interrupted, and returns the pid it reports (0: none with WNOHANG).
func waitid(idtype, id, options int) (int, error) {
	for {
		var info siginfo
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, uintptr(idtype), uintptr(id),
			uintptr(unsafe.Pointer(&info)), uintptr(options), 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return 0, errno
		}
		return int(info.pid), nil
	}
}

const (
	pAll = 0 // idtype P_ALL: any child
	pPid = 1 // idtype P_PID: the child id names
)

// waitExited blocks until child pid has exited, without reaping it.
func waitExited(pid int) error {
	_, err := waitid(pPid, pid, syscall.WEXITED|syscall.WNOWAIT)
	return err
}
