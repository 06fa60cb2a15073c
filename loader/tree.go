package loader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/addonops/addon-operator/secretfile"
)

// session is one Load's reading state: its context, its bounds and the
// warnings it gathers. Reads happen on one goroutine, so it needs no lock.
type session struct {
	ctx      context.Context
	maxFile  int64
	warnings []string
	buf      []byte     // for streamed hashing
	roots    []*os.Root // opened for this load, closed when it ends
	// ownRoots: with no tree root, each module is bounded by itself
	ownRoots bool
	alias    string // WithTreeRootAlias (alias.go)
	tree     dir    // the tree's root, when the load has one
	// secrets: WithSecrets; encrypted: the paths its files had;
	// placeholders: some were read as placeholders (secrets.go)
	secrets      *secretOptions
	encrypted    map[string][]secretfile.Path
	placeholders bool
}

func newSession(ctx context.Context, maxFile int64, alias string) *session {
	return &session{ctx: ctx, maxFile: maxFile, alias: alias, buf: make([]byte, 64<<10)}
}

func (s *session) warn(format string, args ...any) {
	s.warnings = append(s.warnings, fmt.Sprintf(format, args...))
}

// openRoot opens a root that lives as long as the load.
func (s *session) openRoot(path string) (*os.Root, error) {
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, fileErr(path, err)
	}
	s.roots = append(s.roots, r)
	return r, nil
}

func (s *session) close() {
	for _, r := range s.roots {
		_ = r.Close()
	}
	s.roots = nil
}

// dir is a directory read beneath a root. The root resolves every name,
// link by link, so neither a link nor a chain of links can lead a read out
// of it, whatever the paths say on paper; and the kernel, not a textual
// check done earlier, is what refuses.
type dir struct {
	s    *session
	root *os.Root
	rel  string // the directory relative to the root: "." for the root
	abs  string // the directory's path, for the model and for errors
}

func (d dir) sub(name string) dir {
	return dir{s: d.s, root: d.root, rel: d.name(name), abs: d.path(name)}
}

// name is the root-relative name of an entry of d.
func (d dir) name(entry string) string { return filepath.Join(d.rel, entry) }

// path is the path of an entry of d, as errors and the model show it.
func (d dir) path(entry string) string { return filepath.Join(d.abs, entry) }

// stat follows links beneath the root and refuses anything but a regular
// file or a directory: the loader reads nothing else.
func (d dir) stat(entry string) (fs.FileInfo, error) {
	if err := d.s.ctx.Err(); err != nil {
		return nil, fileErr(d.path(entry), err)
	}
	var info fs.FileInfo
	err := d.retry(d.name(entry), func(name string) (err error) { info, err = d.root.Stat(name); return err })
	if err != nil {
		return nil, d.explain(entry, err)
	}
	if err := checkKind(info); err != nil {
		return nil, fileErr(d.path(entry), err)
	}
	return info, nil
}

// optionalStat is stat with a missing entry as nil info and no error.
func optionalStat(d dir, entry string) (fs.FileInfo, error) {
	info, err := d.stat(entry)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return info, err
}

// checkKind refuses devices, FIFOs, sockets and the like: a read of one
// could block for ever or never end, and none comes from a sane tree.
func checkKind(info fs.FileInfo) error {
	if info.Mode().IsRegular() || info.IsDir() {
		return nil
	}
	return errKind(info.Mode())
}

func errKind(m fs.FileMode) error {
	return fmt.Errorf("%s, not a regular file or directory: refused", kindOf(m))
}

func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	}
	return "an irregular file"
}

// explain turns a failure to resolve entry (a name, or a path beneath d)
// into an error that names the file, or the link on its way that fails,
// and says what is wrong. A missing file keeps fs.ErrNotExist for callers
// that treat it as absent; a broken link does not: it is the tree's fault.
// Only failures pay for the extra look-ups.
func (d dir) explain(entry string, err error) error {
	err = stripPath(err)
	if errors.Is(err, syscall.ELOOP) {
		return fileErr(d.path(entry), fmt.Errorf("symlinks loop, or chain too deep: %w", err))
	}
	parts := strings.Split(entry, string(filepath.Separator))
	for i := range parts {
		name := filepath.Join(parts[:i+1]...)
		info, lerr := d.root.Lstat(d.name(name))
		if lerr != nil {
			break
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		serr := d.retry(d.name(name), func(n string) error { _, err := d.root.Stat(n); return err })
		if serr == nil {
			continue
		}
		target, _ := d.root.Readlink(d.name(name))
		if errors.Is(serr, fs.ErrNotExist) {
			return fileErr(d.path(name), &brokenLinkError{target: target})
		}
		return fileErr(d.path(name), fmt.Errorf("symlink leads out of the tree (to %s): %w%s", target, stripPath(serr), d.s.linkHint(target)))
	}
	return fileErr(d.path(entry), err)
}

// brokenLinkError is a link beneath the root whose target does not exist;
// hashDir tells it from other failures.
type brokenLinkError struct{ target string }

func (e *brokenLinkError) Error() string { return fmt.Sprintf("broken symlink (to %s)", e.target) }

// stripPath drops the root-relative name an os.Root error repeats, as the
// loader's error names the file in full.
func stripPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// open opens a regular file beneath the root. O_NONBLOCK keeps a FIFO that
// took the place of a file from blocking the open; the kind is checked on
// the open file, so nothing swapped in after a stat gets read.
func (d dir) open(entry string) (*os.File, fs.FileInfo, error) {
	if err := d.s.ctx.Err(); err != nil {
		return nil, nil, fileErr(d.path(entry), err)
	}
	var f *os.File
	err := d.retry(d.name(entry), func(name string) (err error) {
		f, err = d.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
		return err
	})
	if err != nil {
		return nil, nil, d.explain(entry, err)
	}
	info, err := f.Stat()
	switch {
	case err != nil:
	case info.IsDir():
		err = errors.New("a directory, where the loader reads a file")
	case !info.Mode().IsRegular():
		err = errKind(info.Mode())
	}
	if err != nil {
		_ = f.Close()
		return nil, nil, fileErr(d.path(entry), err)
	}
	return f, info, nil
}

// readFile reads a file the loader parses whole (values, schemas), up to
// the session's bound, so one file cannot take the load's memory or time.
func (d dir) readFile(entry string) ([]byte, error) {
	f, info, err := d.open(entry)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := d.checkSize(entry, info.Size()); err != nil {
		return nil, err
	}
	// the file may grow after the stat: read one byte past the bound to see
	b, err := io.ReadAll(io.LimitReader(f, d.s.maxFile+1))
	if err != nil {
		return nil, fileErr(d.path(entry), err)
	}
	if err := d.checkSize(entry, int64(len(b))); err != nil {
		return nil, err
	}
	return b, nil
}

func (d dir) checkSize(entry string, size int64) error {
	if size > d.s.maxFile {
		return fileErr(d.path(entry), fmt.Errorf("%d bytes, over the limit of %d bytes for a file the loader reads whole", size, d.s.maxFile))
	}
	return nil
}

// fileID tells directories apart whatever links lead to them.
type fileID struct{ dev, ino uint64 }

func idOf(info fs.FileInfo) fileID {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return fileID{dev: uint64(st.Dev), ino: st.Ino}
	}
	return fileID{}
}

// entry is a directory entry resolved beneath the root: what it leads to
// is a regular file or a directory.
type entry struct {
	name  string
	isDir bool
}

// list reads d's entries sorted by name, following links beneath the root
// and refusing anything but regular files and directories, and returns
// d's identity for the walks' cycle checks. skip names entries not to
// resolve (the hook walks skip dot entries).
func (d dir) list(skip func(name string) bool) (fileID, []entry, error) {
	id, des, err := d.readDir()
	if err != nil {
		return fileID{}, nil, err
	}
	out := make([]entry, 0, len(des))
	for _, de := range des {
		if skip != nil && skip(de.Name()) {
			continue
		}
		e, err := d.resolve(de)
		if err != nil {
			return fileID{}, nil, err
		}
		out = append(out, e)
	}
	return id, out, nil
}

// readDir reads d's entries, unresolved and sorted by name, and d's identity.
func (d dir) readDir() (fileID, []fs.DirEntry, error) {
	var f *os.File
	err := d.retry(d.rel, func(name string) (err error) {
		f, err = d.root.OpenFile(name, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
		return err
	})
	if err != nil {
		return fileID{}, nil, d.explainSelf(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fileID{}, nil, fileErr(d.abs, err)
	}
	des, err := f.ReadDir(-1)
	if err != nil {
		return fileID{}, nil, fileErr(d.abs, err)
	}
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return idOf(info), des, nil
}

// followOut resolves the link name at p wherever it leads, which only a
// modules directory read with no tree root allows (a module's own link);
// os.Root is not asked, so it is no method of dir.
// A link to anything but a directory is skipped, as files there are; a
// broken one is an error: a module that vanished would be purged.
func followOut(p, name string) (moduleEntry, error) {
	if err := checkName(name); err != nil {
		return moduleEntry{}, fileErr(p, err)
	}
	target, err := filepath.EvalSymlinks(p)
	if errors.Is(err, fs.ErrNotExist) {
		link, _ := os.Readlink(p)
		return moduleEntry{}, fileErr(p, fmt.Errorf("broken symlink (to %s)", link))
	}
	if err != nil {
		return moduleEntry{}, fileErr(p, stripPath(err))
	}
	info, err := os.Stat(target)
	if err != nil {
		return moduleEntry{}, fileErr(p, stripPath(err))
	}
	if err := checkKind(info); err != nil {
		return moduleEntry{}, fileErr(p, err)
	}
	if !info.IsDir() {
		return moduleEntry{}, nil
	}
	return moduleEntry{name: name, target: target}, nil
}

// explainSelf explains a failure to open d itself.
func (d dir) explainSelf(err error) error {
	if d.rel == "." {
		return fileErr(d.abs, stripPath(err))
	}
	parent := dir{s: d.s, root: d.root, rel: filepath.Dir(d.rel), abs: filepath.Dir(d.abs)}
	return parent.explain(filepath.Base(d.rel), err)
}

// resolve checks one entry's name and kind; only a link costs a stat, as
// the directory listing already tells the kind of anything else.
func (d dir) resolve(de fs.DirEntry) (entry, error) {
	name := de.Name()
	if err := checkName(name); err != nil {
		return entry{}, fileErr(d.path(name), err)
	}
	if err := d.s.ctx.Err(); err != nil {
		return entry{}, fileErr(d.path(name), err)
	}
	t := de.Type()
	switch {
	case t.IsDir():
		return entry{name: name, isDir: true}, nil
	case t.IsRegular():
		return entry{name: name}, nil
	case t&fs.ModeSymlink != 0:
		info, err := d.stat(name)
		if err != nil {
			return entry{}, err
		}
		return entry{name: name, isDir: info.IsDir()}, nil
	}
	return entry{}, fileErr(d.path(name), errKind(t))
}

// checkName refuses entry names no sane tree holds: they could only come
// from a file system that is broken or made to mislead, and would let a
// joined path mean something other than the entry.
func checkName(name string) error {
	switch {
	case name == "", name == ".", name == "..":
		return fmt.Errorf("entry name %q refused", name)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("entry name %q (with a slash or NUL) refused", name)
	}
	return nil
}

// ownDir opens path as a root of its own; a missing directory comes back
// with no root.
func (s *session) ownDir(path string) (dir, error) {
	d := dir{s: s, rel: ".", abs: path}
	r, err := os.OpenRoot(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return d, nil
	case err != nil:
		return d, fileErr(path, stripPath(err))
	}
	s.roots = append(s.roots, r)
	d.root = r
	return d, nil
}

// dirBeneath is path as a directory beneath the root r, which is at
// rootAbs; a missing directory comes back with no root.
func (s *session) dirBeneath(r *os.Root, rootAbs, path string) (dir, error) {
	d := dir{s: s, abs: path}
	rel, err := within(rootAbs, path)
	if err != nil {
		if _, lerr := os.Lstat(path); errors.Is(lerr, fs.ErrNotExist) {
			return d, nil
		}
		return d, err
	}
	top := dir{s: s, root: r, rel: ".", abs: rootAbs}
	info, err := top.stat(rel)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !info.IsDir()) {
		return d, nil
	}
	if err != nil {
		return d, err
	}
	d.root, d.rel = r, rel
	return d, nil
}

// within is path relative to root, resolving links in both when path is
// not lexically beneath root (a caller may name either through a link).
func within(root, path string) (string, error) {
	if rel, err := filepath.Rel(root, path); err == nil && filepath.IsLocal(rel) {
		return rel, nil
	}
	realRoot, err1 := filepath.EvalSymlinks(root)
	realPath, err2 := filepath.EvalSymlinks(path)
	if err1 == nil && err2 == nil {
		if rel, err := filepath.Rel(realRoot, realPath); err == nil && filepath.IsLocal(rel) {
			return rel, nil
		}
	}
	return "", fileErr(path, fmt.Errorf("not beneath the tree's root %s", root))
}
