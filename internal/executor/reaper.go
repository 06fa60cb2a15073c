package executor

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ReapOrphans reaps the orphaned processes the kernel re-parents to this
// process, until ctx ends. Start it when the operator is PID 1 (no init
// in its image reaps them) or a child subreaper (PR_SET_CHILD_SUBREAPER):
// the grandchildren of hooks that Run kills with the hook's group would
// otherwise stay zombies.
//
// It reaps only children outside the operator's own process group that
// are not hooks Run is waiting for. The orphans of hooks are in their
// hook's group, or in one of their own after setsid; the children that
// libraries start and wait for (client-go's exec credential plugins,
// go-git's git-upload-pack) stay in the operator's group, as os/exec
// leaves them, and are left to their owner's Wait (docs/operator.md,
// "How hooks run").
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

// reapOrphans reaps the exited children that are orphans. waitid with
// WNOWAIT says, without reaping, whether any child exited at all; it names
// only the first, which may be a hook or a library's child waiting for its
// owner, so the children are then listed and each orphan reaped by pid.
func reapOrphans(logger *slog.Logger) {
	// no hook is between fork and registration while this is held
	hooks.starting.Lock()
	defer hooks.starting.Unlock()
	own := syscall.Getpgrp()
	for {
		pid, err := waitid(pAll, 0, syscall.WEXITED|syscall.WNOHANG|syscall.WNOWAIT)
		if err != nil {
			if !errors.Is(err, syscall.ECHILD) { // ECHILD: no children at all
				logger.Warn("reaper: waitid", "error", err)
			}
			return
		}
		if pid == 0 {
			return
		}
		reaped := 0
		for _, pid := range ownChildren() {
			if isHook(pid) {
				continue
			}
			// a library's child: its owner waits for it. ESRCH: its owner
			// reaped it meanwhile.
			if pgid, err := syscall.Getpgid(pid); err != nil || pgid == own {
				continue
			}
			var status syscall.WaitStatus
			got, err := syscall.Wait4(pid, &status, syscall.WNOHANG, nil)
			if err != nil && !errors.Is(err, syscall.ECHILD) {
				logger.Warn("reaper: wait4", "pid", pid, "error", err)
				continue
			}
			if got == pid {
				reaped++
				logger.Debug("reaped orphan", "pid", pid, "status", status)
			}
		}
		if reaped == 0 {
			// what exited is a hook or a library's child: their Wait
			// reaps them, and a hook's wakes ReapOrphans again
			return
		}
	}
}

// ownChildren lists this process's children: from each thread's
// /proc/self/task/TID/children, or, where the kernel does not offer that
// file, from the parent field of every process's stat.
func ownChildren() []int {
	var out []int
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	if len(tasks) > 0 {
		return out
	}
	return childrenFromStat()
}

// childrenFromStat lists this process's children by the parent field of
// every process's /proc/PID/stat.
func childrenFromStat() []int {
	var out []int
	self := strconv.Itoa(os.Getpid())
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ..."; comm may hold spaces and parens
		i := strings.LastIndexByte(string(b), ')')
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) < 2 || fields[1] != self {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
			out = append(out, pid)
		}
	}
	return out
}
