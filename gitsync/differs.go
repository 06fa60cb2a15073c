package gitsync

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// differs compares the revision on disk for sha with its plan, and says
// how it differs ("" when it does not): an entry missing, added or of
// another type, a symlink's target, a file's mode or content. The disk is
// not trusted: a hook may have written to it, and its files are shared
// with other revisions. A file whose stat matches its manifest record is
// taken as it is; any other is read and hashed (and recorded anew).
func (w *checkoutWriter) differs(p *plan, sha string, m *manifest) (string, error) {
	dir := filepath.Join(w.revisionsDir(), sha)
	if !isDir(dir) {
		return "not a directory", nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	files := make(map[string]fileStat, len(m.files))
	for _, d := range p.dirs() {
		diff, err := dirDiffers(root, p, d, m, files)
		if diff != "" || err != nil {
			return diff, err
		}
	}
	changed := len(files) != len(m.files)
	for path, st := range files {
		changed = changed || st != m.files[path]
	}
	if changed {
		if err := w.writeManifest(sha, files); err != nil {
			w.logger.Warn("manifest not saved; the revision's files are read again next time", "revision", sha, "err", err)
		}
	}
	return "", nil
}

// dirDiffers compares one directory: its names, then each entry; the
// files' stats go to files.
func dirDiffers(root *os.Root, p *plan, dir string, m *manifest, files map[string]fileStat) (string, error) {
	d, err := openDir(root, dir)
	if err != nil {
		return fmt.Sprintf("%s: %v", displayPath(dir), err), nil
	}
	defer d.close()
	got, err := d.names()
	if err != nil {
		return fmt.Sprintf("%s: %v", displayPath(dir), err), nil
	}
	want := p.children[dir]
	known := make(map[string]bool, len(want))
	for _, name := range want {
		known[name] = true
	}
	for _, name := range got {
		if !known[name] {
			return "an entry not in the commit: " + joinPath(dir, name), nil
		}
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%s holds %d entries, the commit %d", displayPath(dir), len(got), len(want)), nil
	}
	for _, name := range want {
		e := p.entries[p.index[joinPath(dir, name)]]
		diff, st, err := entryDiffers(d, m, e, name)
		if diff != "" || err != nil {
			return diff, err
		}
		if e.kind == kindFile || e.kind == kindExec {
			files[e.path] = st
		}
	}
	return "", nil
}

// entryDiffers compares one entry with the plan; a file's stat comes
// back (as recorded, or as read and hashed now).
func entryDiffers(d *dirFD, m *manifest, e planEntry, name string) (string, fileStat, error) {
	st, err := d.lstat(name)
	if err != nil {
		return e.path + ": " + err.Error(), fileStat{}, nil
	}
	switch typ := st.Mode & unix.S_IFMT; e.kind {
	case kindDir:
		if typ != unix.S_IFDIR {
			return e.path + ": not a directory", fileStat{}, nil
		}
		return "", fileStat{}, nil
	case kindLink:
		if target, err := d.readlink(name); err != nil || typ != unix.S_IFLNK || target != e.target {
			return e.path + ": not the commit's symlink", fileStat{}, nil
		}
		return "", fileStat{}, nil
	}
	if uint32(st.Mode) != e.statMode() {
		return fmt.Sprintf("%s: mode %o, not %o", e.path, st.Mode, e.statMode()), fileStat{}, nil
	}
	if m.fresh(e.path, e.hash, &st) {
		return "", m.files[e.path], nil
	}
	f, err := d.open(name)
	if err != nil {
		return e.path + ": " + err.Error(), fileStat{}, nil
	}
	defer f.Close()
	h, err := blobHash(f, e.size)
	if err != nil {
		return "", fileStat{}, fmt.Errorf("%s: %w", e.path, err)
	}
	if h != e.hash {
		return e.path + ": content differs", fileStat{}, nil
	}
	return "", statOf(e.hash, &st), nil
}

func orDot(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
