package gitsync

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// history is where published revisions are recorded on disk: the current
// link (one rename publishes a revision) and history.json, which a
// restart resumes from (Restore).
type history struct {
	dir string // CheckoutDir
}

var _ historyKeeper = history{}

// currentDir is the stable path of the published revision (a symlink).
func (h history) currentDir() string { return filepath.Join(h.dir, currentLink) }

// publish points the current link at dir with one rename.
func (h history) publish(dir string) error {
	rel, err := filepath.Rel(h.dir, dir)
	if err != nil {
		return err
	}
	tmp := filepath.Join(h.dir, ".current.tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, h.currentDir())
}

// read lists the revisions published by earlier runs, newest first; a
// checkout without the list (an older layout) offers the one its current
// link points at.
func (h history) read() []Revision {
	var hist []Revision
	if b, err := os.ReadFile(filepath.Join(h.dir, historyFile)); err == nil {
		if json.Unmarshal(b, &hist) == nil {
			return hist
		}
	}
	if target, err := os.Readlink(h.currentDir()); err == nil {
		hist = append(hist, Revision{Commit: filepath.Base(target)})
	}
	return hist
}

// write records the published revisions for the next run's Restore.
func (h history) write(hist []Revision) error {
	b, err := json.Marshal(hist)
	if err != nil {
		return err
	}
	tmp := filepath.Join(h.dir, "."+historyFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(h.dir, historyFile))
}
