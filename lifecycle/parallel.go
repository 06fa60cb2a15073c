package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/addonops/addon-operator/internal/steptime"
	"github.com/addonops/addon-operator/lifecycle/taskkind"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/queue"
)

// moduleRun is one module to run in a reload, and whether with onStartup.
type moduleRun struct {
	module  *loader.Module
	startup bool
}

// parallelModules is how many modules of one weight run at once.
func (s *moduleSteps) parallelModules() int {
	if s.cfg.ParallelModules > 0 {
		return s.cfg.ParallelModules
	}
	return runtime.NumCPU()
}

// moduleRunTasks turns the runs of one reload (in module order) into
// tasks: modules of equal weight (numeric prefix) run at once in one task,
// and each weight finishes before the next starts, as in the original
// addon-operator (docs/operator.md, "Modules of equal weight"); a module
// that asks for it holds the next weights until it is Healthy
// (healthwait.go).
func (s *moduleSteps) moduleRunTasks(runs []moduleRun) []*queue.Task {
	var tasks []*queue.Task
	for i := 0; i < len(runs); {
		j := i + 1
		for j < len(runs) && runs[j].module.Order == runs[i].module.Order {
			j++
		}
		if j-i == 1 || s.parallelModules() == 1 {
			for _, r := range runs[i:j] {
				tasks = append(tasks, s.moduleRunTask(r.module.Name, r.startup))
			}
		} else {
			tasks = append(tasks, s.parallelRunTask(runs[i:j]))
		}
		// what comes after this weight waits for those of it that ask
		for _, r := range runs[i:j] {
			if r.module.HealthWait.On {
				tasks = append(tasks, s.waits.healthWaitTask(r.module.Name))
			}
		}
		i = j
	}
	return tasks
}

// parallelRunTask runs the modules of one weight, at most
// parallelModules() at a time. Each module's run is step 5 as when it runs
// alone; a retry of the task runs again only the modules that failed
// retryably, each with onStartup if its failed run had it (the task is
// terminal when every failure was).
//
// Each module is a member of the task (queue.Task.Members): a change that
// supersedes one module's run (a ConfigMap edit to it) drops that module
// from the group while the group waits, so it does not run twice.
func (s *moduleSteps) parallelRunTask(runs []moduleRun) *queue.Task {
	runs = slices.Clone(runs)
	// done[i]: runs[i] succeeded in an earlier attempt (attempts do not
	// overlap; each goroutine writes only its own entry)
	done := make([]bool, len(runs))
	weight := runs[0].module.Order
	describe := func() string {
		names := make([]string, len(runs))
		for i, r := range runs {
			names[i] = r.module.Name
		}
		return fmt.Sprintf("weight %d: %s", weight, strings.Join(names, ", "))
	}
	t := &queue.Task{
		Key:         queue.Key{Kind: taskkind.ParallelRun},
		Description: describe(),
		Do: func(ctx context.Context) error {
			sem := make(chan struct{}, s.parallelModules())
			errs := make([]error, len(runs))
			var wg sync.WaitGroup
			for i, r := range runs {
				if done[i] {
					continue
				}
				name := r.module.Name
				wg.Go(func() {
					sem <- struct{}{}
					defer func() { <-sem }()
					err := s.finishRun(steptime.Start(ctx, s.metrics), name, r.startup)
					if err != nil {
						errs[i] = fmt.Errorf("module %s: %w", name, err)
						// a terminal failure is not retried with the others
						if !queue.IsTerminal(err) {
							return
						}
					}
					done[i] = true
				})
			}
			wg.Wait()
			return errors.Join(errs...)
		},
	}
	for _, r := range runs {
		t.Members = append(t.Members, moduleRunKey(r.module.Name))
	}
	// the queue calls Drop under its lock while the task does not run
	t.Drop = func(k queue.Key) {
		if i := slices.IndexFunc(runs, func(r moduleRun) bool { return moduleRunKey(r.module.Name) == k }); i >= 0 {
			runs, done = slices.Delete(runs, i, i+1), slices.Delete(done, i, i+1)
			t.Description = describe()
		}
	}
	return t
}

// runModuleRecovered is runModule where a panic is the module's failed
// run: in a weight group's goroutine the queue's recovery does not reach,
// and alone the recorder records it the same way.
func (s *moduleSteps) runModuleRecovered(ctx context.Context, name string, startup bool) (o outcome) {
	started := s.cfg.Now()
	defer func() {
		if p := recover(); p != nil {
			o = outcome{What: moduleRunFailed, Module: name, Started: started, Err: fmt.Errorf("panic: %v", p)}
			s.logger.Error("module run panicked", "module", name, "panic", p, "stack", string(debug.Stack()))
		}
	}()
	return s.runModule(ctx, name, startup)
}
