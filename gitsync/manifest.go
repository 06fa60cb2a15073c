package gitsync

import (
	"bytes"
	"crypto/sha1"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"
)

// A manifest records the files of a revision as they were written or
// last checked: per path, the blob and the file's mode, size, mtime and
// inode. A file whose stat still matches is taken to hold its blob
// without being read again; any other is read and hashed. This spares a
// sync reading thousands of files, and it has a limit: a write that keeps
// a file's size and puts its mtime back (touch -r, utimensat) by a
// process that may write the file (the operator's user after a chmod, or
// root) goes unnoticed. So does a write to a hard-linked file after the
// check, until the next revision is built from it or resumed. The
// manifest lives beside the revisions (manifests/<sha>), not in them, so
// it is no entry of a revision.
type manifest struct {
	files map[string]fileStat
	// at is the manifest's own mtime. A file changed within the clock tick
	// it was written in can keep its mtime, so a file whose mtime is not
	// older than the manifest is read again ("racy", as git's index says).
	at int64
}

// fileStat is a file's blob and the stat it had when it was known to
// hold it.
type fileStat struct {
	blob  plumbing.Hash
	mode  uint32 // st_mode: type and permissions
	size  int64
	mtime int64
	ino   uint64
}

func statOf(blob plumbing.Hash, st *unix.Stat_t) fileStat {
	return fileStat{blob: blob, mode: uint32(st.Mode), size: st.Size, mtime: st.Mtim.Nano(), ino: st.Ino}
}

// file is the record of a path (none on a nil manifest).
func (m *manifest) file(path string) (fileStat, bool) {
	if m == nil {
		return fileStat{}, false
	}
	f, ok := m.files[path]
	return f, ok
}

// fresh: the file at path, as st shows it, is the one the manifest
// recorded holding blob, and was not written in the manifest's last tick.
func (m *manifest) fresh(path string, blob plumbing.Hash, st *unix.Stat_t) bool {
	f, ok := m.file(path)
	return ok && f.blob == blob && f.mtime < m.at && f == statOf(blob, st)
}

func (w *checkoutWriter) manifestsDir() string { return filepath.Join(w.dir, "manifests") }

// readManifest reads a revision's manifest; a missing or unreadable one
// is empty (every file is then read).
func (w *checkoutWriter) readManifest(sha string) *manifest {
	m := &manifest{files: map[string]fileStat{}}
	p := filepath.Join(w.manifestsDir(), sha)
	info, err := os.Stat(p)
	if err != nil {
		return m
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return m
	}
	for _, rec := range bytes.Split(b, []byte{0}) {
		path, st, ok := parseRecord(string(rec))
		if !ok {
			continue
		}
		m.files[path] = st
	}
	m.at = info.ModTime().UnixNano()
	return m
}

// A record is "blob mode size mtime ino path", NUL-terminated: NUL is the
// one byte a path of a git tree cannot hold.
func parseRecord(rec string) (string, fileStat, bool) {
	f := strings.SplitN(rec, " ", 6)
	if len(f) != 6 || !shaRe.MatchString(f[0]) {
		return "", fileStat{}, false
	}
	mode, err1 := strconv.ParseUint(f[1], 8, 32)
	n, err2 := strconv.ParseInt(f[2], 10, 64)
	mtime, err3 := strconv.ParseInt(f[3], 10, 64)
	ino, err4 := strconv.ParseUint(f[4], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return "", fileStat{}, false
	}
	return f[5], fileStat{blob: plumbing.NewHash(f[0]), mode: uint32(mode), size: n, mtime: mtime, ino: ino}, true
}

// writeManifest records a revision's files. It is written after them, so
// its mtime is not older than theirs.
func (w *checkoutWriter) writeManifest(sha string, files map[string]fileStat) error {
	var b bytes.Buffer
	for path, st := range files {
		fmt.Fprintf(&b, "%s %o %d %d %d %s\x00", st.blob, st.mode, st.size, st.mtime, st.ino, path)
	}
	tmp := filepath.Join(w.manifestsDir(), "."+sha+".tmp")
	if err := os.WriteFile(tmp, b.Bytes(), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(w.manifestsDir(), sha))
}

// blobHash hashes r as git hashes a blob of n bytes; it reads at most n+1
// bytes, so a longer file does not match.
func blobHash(r io.Reader, n int64) (plumbing.Hash, error) {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", n)
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	m, err := io.CopyBuffer(h, io.LimitReader(r, n+1), *buf)
	if err != nil || m != n {
		return plumbing.ZeroHash, err
	}
	return plumbing.Hash(h.Sum(nil)), nil
}

// copyBuffers spare each file read or written its own copy buffer.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}
