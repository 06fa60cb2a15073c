package main

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/lifecycle"
)

// watchDebounce is how long the tree must be quiet before a change counts.
const watchDebounce = 200 * time.Millisecond

// watchDirs are the directories whose edits reload a working copy: every
// modules directory, the global hooks directory, and the directories that
// modules linked from a modules directory lead to (the watcher does not
// follow links). A module linked in later is watched from the next start.
func watchDirs(modulesDirs, globalHooksDir string, logger *slog.Logger) []string {
	dirs := append(filepath.SplitList(modulesDirs), globalHooksDir)
	for _, d := range filepath.SplitList(modulesDirs) {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue // the load says what is wrong with it
		}
		for _, e := range entries {
			if e.Type()&fs.ModeSymlink == 0 {
				continue
			}
			target, err := filepath.EvalSymlinks(filepath.Join(d, e.Name()))
			if st, serr := os.Stat(target); err == nil && serr == nil && st.IsDir() {
				logger.Debug("watching a linked module", "link", filepath.Join(d, e.Name()), "target", target)
				dirs = append(dirs, target)
			}
		}
	}
	return dirs
}

// watchTree runs the tree watcher of no-git mode in g: every save under the
// directories reloads the tree.
func (s *startup) watchTree(ctx context.Context, g *errgroup.Group) {
	watcher := gitsync.NewTreeWatcher(s.logger, watchDebounce, watchDirs(s.op.ModulesDir, s.op.GlobalHooksDir, s.logger)...)
	g.Go(func() error {
		if err := watcher.Run(ctx, func() { s.operator.TreeChanged(lifecycle.Revision{}) }); err != nil {
			s.logger.Error("tree watcher stopped; edits will not be picked up", "err", err)
		}
		return nil
	})
}

// workTreeTop is the top of the git work tree holding the first modules
// directory: the repository's root a tree root alias names, which then
// bounds every read of the tree.
func workTreeTop(modulesDirs string) (string, error) {
	first := filepath.SplitList(modulesDirs)[0]
	dir, err := filepath.Abs(first)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("--tree-root-alias without GIT_URL maps onto the git work tree that holds the modules directory, and %s is in none", first)
		}
	}
}
