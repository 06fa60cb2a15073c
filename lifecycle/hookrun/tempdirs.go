package hookrun

import (
	"context"
	"fmt"
	"os"
	"sync"
)

// tempDirs keeps a hook run's directory-level file work off the run
// (docs/performance.md, "Where a module run's time goes"): while Run runs,
// a directory for the next run is made ahead, with its empty result files,
// and a finished run's directory is removed after the run. Each run still
// gets a directory no run had before. Without Run (a Runner used on its
// own), take makes one and release removes it, in the run.
type tempDirs struct {
	base  string
	ready chan *Files   // made ahead, never used
	used  chan string   // to remove
	taken chan struct{} // a ready one was taken: make another

	mu sync.Mutex
	on bool // Run runs: used is drained
}

func newTempDirs(base string) *tempDirs {
	return &tempDirs{base: base, ready: make(chan *Files, 2), used: make(chan string, 64), taken: make(chan struct{}, 1)}
}

// resultFiles are the files a run may hand back, created empty
// (docs/operator.md, "How hooks run").
func (f *Files) resultFiles() []string {
	return []string{f.configPatch, f.valuesPatch, f.metrics, f.kubePatch}
}

// inputFiles are the files a run's inputs are written to: made ahead
// empty too, so the run writes into files that exist (on an overlay or a
// busy disk, creating a file costs more than writing it).
func (f *Files) inputFiles() []string {
	return []string{f.bindingContext, f.configValues, f.values}
}

// fresh makes a new directory with its empty result and input files.
func (t *tempDirs) fresh() (*Files, error) {
	f, err := newFiles(t.base)
	if err != nil {
		return nil, err
	}
	for _, p := range append(f.resultFiles(), f.inputFiles()...) {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			os.RemoveAll(f.Dir)
			return nil, fmt.Errorf("hook temp dir: %w", err)
		}
	}
	return f, nil
}

// take returns a new directory with empty result files: one made ahead
// when there is one.
func (t *tempDirs) take() (*Files, error) {
	select {
	case f := <-t.ready:
		select {
		case t.taken <- struct{}{}:
		default:
		}
		// one made ahead may have been removed since (a temp cleaner)
		if _, err := os.Lstat(f.configPatch); err == nil {
			return f, nil
		}
		t.release(f.Dir)
	default:
	}
	return t.fresh()
}

// release removes a run's directory: after the run while Run runs.
func (t *tempDirs) release(dir string) {
	t.mu.Lock()
	if t.on {
		select {
		case t.used <- dir:
			t.mu.Unlock()
			return
		default: // behind: removed in the run
		}
	}
	t.mu.Unlock()
	os.RemoveAll(dir)
}

// run keeps a directory made ahead and removes used ones until ctx ends,
// then removes what it holds.
func (t *tempDirs) run(ctx context.Context) {
	t.mu.Lock()
	t.on = true
	t.mu.Unlock()
	defer t.stop()
	for {
		select {
		case <-ctx.Done():
			return
		case dir := <-t.used:
			os.RemoveAll(dir)
			continue
		default:
		}
		if len(t.ready) < cap(t.ready) {
			// only this goroutine fills ready: the send does not block
			if f, err := t.fresh(); err == nil {
				t.ready <- f
				continue
			}
			// a failure is the run's to report: take makes its own
		}
		select {
		case <-ctx.Done():
			return
		case dir := <-t.used:
			os.RemoveAll(dir)
		case <-t.taken:
		}
	}
}

// stop removes the directories made ahead and those left to remove; later
// releases remove their own.
func (t *tempDirs) stop() {
	t.mu.Lock()
	t.on = false
	t.mu.Unlock()
	for {
		select {
		case dir := <-t.used:
			os.RemoveAll(dir)
		case f := <-t.ready:
			os.RemoveAll(f.Dir)
		default:
			return
		}
	}
}
