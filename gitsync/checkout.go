package gitsync

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/object"
	"golang.org/x/sys/unix"
)

// checkoutWriter writes revisions: revisions/<sha> holds a commit's tree
// within Paths, with its manifest beside it (manifests/<sha>); it also
// removes the revisions nothing needs any more (prune).
type checkoutWriter struct {
	dir     string // CheckoutDir
	logger  *slog.Logger
	objects objectReader
	why     explainer
	plan    planning
	// pruning: old revisions are being removed, after a publish and off
	// its critical path; the next checkout waits for it
	pruning sync.WaitGroup
}

var _ revisionWriter = (*checkoutWriter)(nil)

// planning is what writing a revision asks of the planner.
type planning interface {
	planTree(tree *object.Tree, known *manifest) (*plan, error)
	fileLimit(path string, n int64) error
}

// checkout makes revisions/<sha> hold exactly the commit's tree within
// Paths, byte for byte and mode for mode, and returns it. The tree is
// planned (and refused) before anything is written. A revision already on
// disk is used as it is only when it matches the plan; otherwise, as for
// a new one, it is written into a temporary directory that is renamed
// into place (no reader sees half a tree), with hard links to the files
// of the previous revision (or of the one it replaces) that are known to
// hold the right blob.
// The second result is the content's digest (plan.digest): what tells a
// rollback to content published before (Revision.Tree).
func (w *checkoutWriter) checkout(c *object.Commit, prev *Revision) (string, string, error) {
	w.pruning.Wait()
	sha := c.Hash.String()
	tree, err := c.Tree()
	if err != nil {
		return "", "", w.why.objectErr("tree", c.TreeHash, "", err)
	}
	// the revision files are taken from: this one's, already on disk, or
	// the previous one
	final := filepath.Join(w.revisionsDir(), sha)
	from := ""
	_, err = os.Lstat(final)
	exists := err == nil
	switch {
	case exists:
		from = sha
	case prev != nil && prev.Commit != sha && filepath.Dir(prev.Dir) == w.revisionsDir():
		from = prev.Commit
	}
	var known *manifest
	if from != "" {
		known = w.readManifest(from)
	}
	p, err := w.plan.planTree(tree, known)
	if err != nil {
		return "", "", fmt.Errorf("revision %s: %w", short(sha), err)
	}
	if exists {
		diff, err := w.differs(p, sha, known)
		if err != nil {
			return "", "", err
		}
		if diff == "" {
			return final, p.digest(), nil
		}
		w.logger.Warn("the revision on disk differs from its commit; writing it again", "revision", sha, "difference", diff)
	}
	if err := w.build(p, sha, from, known); err != nil {
		return "", "", fmt.Errorf("check out %s: %w", short(sha), err)
	}
	return final, p.digest(), nil
}

func (w *checkoutWriter) revisionsDir() string { return filepath.Join(w.dir, "revisions") }

// build writes the plan into a temporary directory, records its manifest
// and renames it to revisions/<sha>; a revision there already (which
// differs) is moved aside (the temporary name, unique, plus ".stale") for
// cleanup to remove, since a hook may still run from it.
func (w *checkoutWriter) build(p *plan, sha, from string, known *manifest) error {
	tmp, err := os.MkdirTemp(w.revisionsDir(), ".tmp-")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(tmp)
		}
	}()
	files, err := w.materialize(p, filepath.Base(tmp), from, known)
	if err != nil {
		return err
	}
	if err := w.writeManifest(sha, files); err != nil {
		return err
	}
	final := filepath.Join(w.revisionsDir(), sha)
	if _, err := os.Lstat(final); err == nil {
		if err := os.Rename(final, tmp+".stale"); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	ok = true
	return nil
}

// materialize writes the plan into revisions/<tmp>, a directory at a
// time. Every directory is opened through an os.Root, and each entry is
// created in it by name (mkdir, symlink, O_EXCL file, hard link), so
// nothing is written through a symlink, even one the tree just made, nor
// outside the revision. Files of revisions/<from> are linked where they
// hold the right blob (src is their manifest). It returns the files'
// stats.
func (w *checkoutWriter) materialize(p *plan, tmp, from string, src *manifest) (map[string]fileStat, error) {
	root, err := os.OpenRoot(filepath.Join(w.revisionsDir(), tmp))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var srcRoot *os.Root
	if dir := filepath.Join(w.revisionsDir(), from); from != "" && isDir(dir) {
		if srcRoot, err = os.OpenRoot(dir); err == nil {
			defer srcRoot.Close()
		}
	}
	files := make(map[string]fileStat, len(p.entries))
	for _, dir := range p.dirs() {
		if err := w.fillDir(p, dir, root, srcRoot, src, files); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// fillDir makes the entries of one directory (which exists).
func (w *checkoutWriter) fillDir(p *plan, dir string, root, srcRoot *os.Root, src *manifest, files map[string]fileStat) error {
	dst, err := openDir(root, dir)
	if err != nil {
		return fmt.Errorf("%s: %w", displayPath(dir), err)
	}
	defer dst.close()
	var from *dirFD
	if srcRoot != nil {
		from, _ = openDir(srcRoot, dir) // gone or changed: nothing to link
		defer from.close()
	}
	for _, name := range p.children[dir] {
		e := p.entries[p.index[joinPath(dir, name)]]
		switch e.kind {
		case kindDir:
			err = dst.mkdir(name)
		case kindLink:
			err = dst.symlink(e.target, name)
		default:
			// a file that cannot be linked (another file system, too many
			// links, not ours) is written
			st, linked := reusable(from, src, e, name)
			if !linked || dst.linkFrom(from, name) != nil {
				st, err = w.writeBlob(dst, e, name)
			}
			files[e.path] = st
		}
		if err != nil {
			return fmt.Errorf("%s: %w", e.path, err)
		}
	}
	return nil
}

// isDir: p is a directory, not a symlink to one.
func isDir(p string) bool {
	info, err := os.Lstat(p)
	return err == nil && info.IsDir()
}

// reusable: the file the previous revision holds under the entry's name
// holds its blob, with its mode: its stat matches the manifest, or it
// reads as the blob (then its stat is the new record).
func reusable(from *dirFD, src *manifest, e planEntry, name string) (fileStat, bool) {
	if from == nil {
		return fileStat{}, false
	}
	st, err := from.lstat(name)
	if err != nil || uint32(st.Mode) != e.statMode() {
		return fileStat{}, false
	}
	if src.fresh(e.path, e.hash, &st) {
		return src.files[e.path], true
	}
	f, err := from.open(name)
	if err != nil {
		return fileStat{}, false
	}
	defer f.Close()
	if h, err := blobHash(f, e.size); err != nil || h != e.hash {
		return fileStat{}, false
	}
	return statOf(e.hash, &st), true
}

// writeBlob streams a blob to a new file, hashing it on the way: content
// that does not hash to the blob is a damaged store.
func (w *checkoutWriter) writeBlob(dst *dirFD, e planEntry, name string) (fileStat, error) {
	obj, err := w.objects.blob(e.hash)
	if err != nil {
		return fileStat{}, w.why.objectErr("blob", e.hash, e.path, err)
	}
	if obj.Size() != e.size { // the size came from a manifest that was wrong
		if err := w.plan.fileLimit(e.path, obj.Size()); err != nil {
			return fileStat{}, err
		}
		e.size = obj.Size()
	}
	r, err := obj.Reader()
	if err != nil {
		return fileStat{}, w.why.objectErr("blob", e.hash, e.path, err)
	}
	defer r.Close()
	out, err := dst.create(name, e.perm())
	if err != nil {
		return fileStat{}, err
	}
	defer out.Close()
	in := &readErr{r: r}
	got, err := blobHash(io.TeeReader(in, out), e.size)
	switch {
	case in.err != nil:
		return fileStat{}, w.why.objectErr("blob", e.hash, e.path, in.err)
	case err != nil:
		return fileStat{}, err
	case got != e.hash:
		return fileStat{}, damaged(fmt.Errorf("%s: blob %s reads back as %s from the object store", e.path, e.hash, got))
	}
	if err := out.Chmod(os.FileMode(e.perm())); err != nil { // whatever the umask
		return fileStat{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(out.Fd()), &st); err != nil {
		return fileStat{}, err
	}
	return statOf(e.hash, &st), out.Close()
}

// readErr keeps a reader's error apart from the writer's in a copy.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	if err != nil && !errors.Is(err, io.EOF) {
		r.err = err
	}
	return n, err
}

// prune removes, off the caller's path, the revisions keep does not
// name, with their manifests (and the leftovers of a build, or of a
// revision written again); the next checkout waits for it.
func (w *checkoutWriter) prune(keep func() map[string]bool) {
	w.pruning.Go(func() {
		k := keep()
		for _, dir := range []string{w.revisionsDir(), w.manifestsDir()} {
			entries, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, e := range entries {
				if !k[e.Name()] {
					_ = os.RemoveAll(filepath.Join(dir, e.Name()))
				}
			}
		}
	})
}

// wait returns once no prune runs.
func (w *checkoutWriter) wait() { w.pruning.Wait() }
