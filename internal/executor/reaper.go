package executor

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// ReapOrphans reaps the orphaned processes the kernel re-parents to this
// process, until ctx ends. Start it when the operator is PID 1 (no init
// in its image reaps them) or a child subreaper (PR_SET_CHILD_SUBREAPER):
// the grandchildren of hooks that Run kills with the hook's group would
// otherwise stay zombies.
//
// It leaves alone the hooks Run started: their exec.Cmd.Wait reaps them.
// Any other child this operator started without Run would be reaped
// under its Wait, which then fails with ECHILD. The operator starts none
// itself, but a kubeconfig with an exec credential plugin makes client-go
// start one: do not combine that with the reaper.
func ReapOrphans(ctx context.Context, logger *slog.Logger) {
	sigchld := make(chan os.Signal, 1)
	signal.Notify(sigchld, syscall.SIGCHLD)
	defer signal.Stop(sigchld)
	for {
		// a signal stands for any number of exits: reap all there are
		reapOrphans(logger)
		select {
		case <-ctx.Done():
			return
		case <-sigchld:
		case <-hooks.reaped:
		}
	}
}

// reapOrphans reaps the exited children that are not hooks. waitid with
// WNOWAIT names an exited child without reaping it, so a hook can be told
// apart and left to its Wait. waitid names the same child until it is
// reaped: when that is a hook, the orphans behind it wait for Run to reap
// it, which wakes ReapOrphans (hooks.reaped).
func reapOrphans(logger *slog.Logger) {
	// no hook is between fork and registration while this is held
	hooks.starting.Lock()
	defer hooks.starting.Unlock()
	for {
		pid, err := waitid(pAll, 0, syscall.WEXITED|syscall.WNOHANG|syscall.WNOWAIT)
		if err != nil {
			if !errors.Is(err, syscall.ECHILD) { // ECHILD: no children at all
				logger.Warn("reaper: waitid", "error", err)
			}
			return
		}
		if pid == 0 || isHook(pid) {
			return
		}
		var status syscall.WaitStatus
		// ECHILD: Run reaped the hook pid named after isHook said it
		// was not one any more; look again
		if _, err := syscall.Wait4(pid, &status, syscall.WNOHANG, nil); err != nil && !errors.Is(err, syscall.ECHILD) {
			logger.Warn("reaper: wait4", "pid", pid, "error", err)
			return
		}
		logger.Debug("reaped orphan", "pid", pid, "status", status)
	}
}
