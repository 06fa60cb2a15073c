package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func init() {
	helpers["subreaper"] = subreaper
}

// TestReapOrphans runs an operator that is a child subreaper, as PID 1
// is one: the orphans of its hooks become its children. With ReapOrphans
// running, none is left a zombie and no hook's Wait loses its exit status
// to the reaper; without it, zombies stay (which shows the check works).
func TestReapOrphans(t *testing.T) {
	tests := []struct {
		reap       bool
		minZombies int
		maxZombies int
	}{
		{reap: true},
		// one orphan per hook, two when a subshell had forked in time
		{reap: false, minZombies: hookRounds * len(orphanHooks), maxZombies: 2 * hookRounds * len(orphanHooks)},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("reap=%t", tt.reap), func(t *testing.T) {
			var out bytes.Buffer
			op := helper(t, "subreaper", &out, "REAP="+strconv.FormatBool(tt.reap), "HOOKDIR="+t.TempDir())
			err := op.Wait()
			var zombies int
			if _, scanErr := fmt.Sscanf(out.String(), "zombies: %d\n", &zombies); err != nil || scanErr != nil {
				t.Fatalf("operator: %v, printed %q", err, out.String())
			}
			if zombies < tt.minZombies || zombies > tt.maxZombies {
				t.Fatalf("%d zombies left, want %d to %d", zombies, tt.minZombies, tt.maxZombies)
			}
		})
	}
}

// orphanHooks each leave one orphan: a child killed with the group, or
// one that left the group and exits on its own (or is killed with the
// group if it had not left it yet).
var orphanHooks = []struct{ body, wantErr string }{
	{body: `sleep 30 & exit 0`},
	{body: `sleep 30 & exit 3`, wantErr: "exit status 3"},
	{body: `setsid sleep 0.05 </dev/null >/dev/null 2>&1 & exit 0`},
	{body: `(sleep 30; :) & exit 0`},
}

const (
	prSetChildSubreaper = 36 // prctl(2)
	hookRounds          = 10
)

// subreaper is the helper process of TestReapOrphans. It prints how many
// zombie children it has once its hooks and their orphans have ended.
func subreaper() {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		fmt.Fprintln(os.Stderr, "prctl:", errno)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if os.Getenv("REAP") == "true" {
		go ReapOrphans(ctx, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	}
	// children a library starts and waits for, meanwhile: the reaper
	// must leave them to their Wait
	libErr := make(chan error, 1)
	go func() { libErr <- runLibraryChildren(hookRounds * len(orphanHooks)) }()
	if err := errors.Join(runOrphanHooks(ctx, hookRounds), <-libErr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// the orphans end soon; the reaper, if any, reaps them soon after
	deadline := time.Now().Add(3 * time.Second)
	for {
		all, zombies := children(os.Getpid())
		if all == zombies && (zombies == 0 || os.Getenv("REAP") != "true") || time.Now().After(deadline) {
			fmt.Printf("zombies: %d\n", zombies)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runOrphanHooks runs each of orphanHooks rounds times, all at once.
func runOrphanHooks(ctx context.Context, rounds int) error {
	dir := os.Getenv("HOOKDIR")
	var wg sync.WaitGroup
	errs := make(chan error, rounds*len(orphanHooks))
	// all written before any is run: a file open for writing while
	// another goroutine forks cannot be run (ETXTBSY)
	paths := make([]string, len(orphanHooks))
	for i, h := range orphanHooks {
		paths[i] = filepath.Join(dir, strconv.Itoa(i))
		if err := os.WriteFile(paths[i], []byte("#!/usr/bin/env bash\n"+h.body), 0o755); err != nil {
			return err
		}
	}
	for i, h := range orphanHooks {
		for range rounds {
			wg.Go(func() {
				_, err := Run(ctx, Command{Path: paths[i], Logger: slog.New(slog.DiscardHandler)})
				switch {
				case h.wantErr == "" && err != nil, h.wantErr != "" && (err == nil || !strings.Contains(err.Error(), h.wantErr)):
					errs <- fmt.Errorf("hook %q: %v", h.body, err)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// runLibraryChildren starts n children with os/exec, as client-go starts
// an exec credential plugin, each waited for only after it has exited
// (and the reaper has been signalled); each Wait must see its exit status.
func runLibraryChildren(n int) error {
	var errs []error
	for range n {
		cmd := exec.Command("sh", "-c", "exit 7")
		if err := cmd.Start(); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
		var exit *exec.ExitError
		if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 7 {
			errs = append(errs, fmt.Errorf("a library's child: Wait = %v, want exit status 7", err))
		}
	}
	return errors.Join(errs...)
}

// TestOwnChildren: both ways of listing children see the same ones.
func TestOwnChildren(t *testing.T) {
	var pids []int
	for range 3 {
		cmd := exec.Command("sleep", "5")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		pids = append(pids, cmd.Process.Pid)
	}
	fromTasks, fromStat := ownChildren(), childrenFromStat()
	slices.Sort(fromTasks)
	slices.Sort(fromStat)
	for _, pid := range pids {
		if !slices.Contains(fromTasks, pid) || !slices.Contains(fromStat, pid) {
			t.Fatalf("child %d: from tasks %v, from stat %v", pid, fromTasks, fromStat)
		}
	}
}

// children counts the processes whose parent is ppid, and the zombies
// among them.
func children(ppid int) (all, zombies int) {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ..."; comm may hold spaces and parens
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(ppid) {
			continue
		}
		all++
		if fields[0] == "Z" {
			zombies++
		}
	}
	return all, zombies
}
