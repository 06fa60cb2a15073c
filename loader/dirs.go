package loader

import (
	"errors"
	"fmt"
	"path/filepath"
)

// openDirs opens the modules directories and the global hooks directory
// beneath root, or, with no root, each beneath itself. A global hooks
// directory that does not exist comes back with no root: it is an empty one.
func (s *session) openDirs(root, modulesDirs, globalHooksDir string) (modules []dir, global dir, err error) {
	rootAbs := ""
	open := s.ownDir
	if root == "" {
		s.ownRoots = true
	} else {
		if rootAbs, err = filepath.Abs(root); err != nil {
			return nil, dir{}, err
		}
		r, err := s.openRoot(rootAbs)
		if err != nil {
			return nil, dir{}, err
		}
		s.tree = dir{s: s, root: r, rel: ".", abs: rootAbs}
		open = func(path string) (dir, error) { return s.dirBeneath(r, rootAbs, path) }
	}
	for _, p := range filepath.SplitList(modulesDirs) {
		if p == "" {
			continue
		}
		abs, err := dirPath(root, rootAbs, p)
		if err != nil {
			return nil, dir{}, err
		}
		d, err := open(abs)
		if err != nil {
			return nil, dir{}, err
		}
		if d.root == nil {
			return nil, dir{}, fileErr(abs, errors.New("modules directory not found"))
		}
		modules = append(modules, d)
	}
	if len(modules) == 0 {
		return nil, dir{}, fmt.Errorf("no modules directory in %q", modulesDirs)
	}
	abs, err := dirPath(root, rootAbs, globalHooksDir)
	if err != nil {
		return nil, dir{}, err
	}
	global, err = open(abs)
	return modules, global, err
}

// dirPath is a configured directory's absolute path. With a root, a
// relative directory is inside it: written beneath it, as callers join
// them (root/modules), or relative to it (modules). Without a root its
// links are resolved, so the model's paths stay valid if a link among
// them moves on.
func dirPath(rootRel, rootAbs, p string) (string, error) {
	if rootAbs != "" {
		switch {
		case filepath.IsAbs(p):
			return filepath.Clean(p), nil
		case isBeneath(rootRel, p):
			return filepath.Abs(p)
		}
		return filepath.Join(rootAbs, p), nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil
}

// isBeneath: p is written as a path beneath root.
func isBeneath(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && filepath.IsLocal(rel)
}
