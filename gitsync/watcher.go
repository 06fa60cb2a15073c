package gitsync

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// TreeWatcher reports changes under directories, recursively and debounced:
// a burst of events (an editor's save, a checkout) is one change, reported
// once the directories have been quiet for the debounce period.
type TreeWatcher struct {
	dirs     []string
	debounce time.Duration
	logger   *slog.Logger
}

// NewTreeWatcher watches dirs; a missing directory is skipped until the next
// Run (the global hooks directory may not exist).
func NewTreeWatcher(logger *slog.Logger, debounce time.Duration, dirs ...string) *TreeWatcher {
	if logger == nil {
		logger = slog.Default()
	}
	return &TreeWatcher{dirs: dirs, debounce: debounce, logger: logger}
}

// Run calls onChange after each quiet period that followed changes, until
// ctx is done.
func (w *TreeWatcher) Run(ctx context.Context, onChange func()) error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer fw.Close()
	for _, d := range w.dirs {
		if err := addRecursive(fw, d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	pending := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fw.Events:
			if !ok {
				return nil
			}
			if ignored(ev.Name) {
				continue
			}
			if ev.Has(fsnotify.Create) {
				if st, err := os.Stat(ev.Name); err == nil && st.IsDir() {
					_ = addRecursive(fw, ev.Name)
				}
			}
			pending = true
			timer.Reset(w.debounce)
		case err, ok := <-fw.Errors:
			if !ok {
				return nil
			}
			w.logger.Warn("tree watcher", "err", err)
		case <-timer.C:
			if pending {
				pending = false
				onChange()
			}
		}
	}
}

// ignored: editor swap and backup files do not count as changes.
func ignored(name string) bool {
	base := filepath.Base(name)
	return strings.HasSuffix(base, ".swp") || strings.HasSuffix(base, ".swx") || strings.HasSuffix(base, "~") ||
		strings.HasPrefix(base, ".#") || base == "4913"
}

func addRecursive(fw *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return fw.Add(p)
		}
		return nil
	})
}
