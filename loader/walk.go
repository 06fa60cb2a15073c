package loader

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// hookFinder lists the executable files under a hooks directory.
type hookFinder struct {
	nameBase   string // hook names are relative to it
	module     string
	workingDir string
	// visited keeps a directory reached through two links from being
	// listed twice, and a link back up from looping.
	visited map[fileID]bool
	hooks   []*Hook
}

// findHooks lists the executable files under d, recursively and sorted,
// skipping dot entries and the named top-level directories. Names are
// relative to nameBase.
func findHooks(d dir, nameBase, module string, skipTop map[string]bool) ([]*Hook, error) {
	f := &hookFinder{nameBase: nameBase, module: module, workingDir: d.abs, visited: map[fileID]bool{}}
	if err := f.walk(d, skipTop); err != nil {
		return nil, err
	}
	return f.hooks, nil
}

func (f *hookFinder) walk(d dir, skip map[string]bool) error {
	id, entries, err := d.list(func(name string) bool { return strings.HasPrefix(name, ".") || skip[name] })
	if err != nil {
		return err
	}
	if f.visited[id] {
		return nil
	}
	f.visited[id] = true
	for _, e := range entries {
		if e.isDir {
			err = f.walk(d.sub(e.name), nil)
		} else {
			err = f.file(d, e.name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// file adds an executable file as a hook, hashing it as it streams, and
// warns of a script that is not executable.
func (f *hookFinder) file(d dir, name string) error {
	fh, info, err := d.open(name)
	if err != nil {
		return err
	}
	defer fh.Close()
	p := d.path(name)
	if info.Mode()&0o111 == 0 {
		if looksLikeHook(p, fh) {
			d.s.warn("%s: looks like a hook but is not executable (chmod +x); skipped", p)
		}
		return nil
	}
	h := sha256.New()
	if err := d.s.copy(h, fh); err != nil {
		return fileErr(p, err)
	}
	rel, _ := filepath.Rel(f.nameBase, p)
	f.hooks = append(f.hooks, &Hook{Name: rel, Path: p, Module: f.module, WorkingDir: f.workingDir, Hash: hex.EncodeToString(h.Sum(nil))})
	return nil
}

// looksLikeHook: a script extension or a shebang line.
func looksLikeHook(path string, f *os.File) bool {
	switch filepath.Ext(path) {
	case ".sh", ".py", ".rb", ".pl", ".bash":
		return true
	}
	line, _ := bufio.NewReader(io.LimitReader(f, 256)).ReadBytes('\n')
	return bytes.HasPrefix(line, []byte("#!"))
}

// copy streams r into w, checking the load's context between chunks, so a
// huge file costs at most the time left.
func (s *session) copy(w io.Writer, r io.Reader) error {
	for {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		n, err := r.Read(s.buf)
		if n > 0 {
			_, _ = w.Write(s.buf[:n]) // hash writes do not fail
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// hashTree writes every file under d (path, mode, content) into h,
// following links beneath the root: hidden entries too, as they are part
// of what a hook may read.
func hashTree(h io.Writer, d dir) error {
	return hashDir(h, d, "", map[fileID]bool{})
}

// hashDir hashes d as prefix. ancestors are the directories being hashed
// above it: a link back up to one of them is hashed as a marker rather
// than followed for ever.
func hashDir(h io.Writer, d dir, prefix string, ancestors map[fileID]bool) error {
	id, entries, err := d.list(nil)
	if err != nil {
		return err
	}
	if ancestors[id] {
		fmt.Fprintf(h, "%s\x00loop\x00", prefix)
		return nil
	}
	ancestors[id] = true
	defer delete(ancestors, id)
	for _, e := range entries {
		rel := filepath.Join(prefix, e.name)
		if e.isDir {
			err = hashDir(h, d.sub(e.name), rel, ancestors)
		} else {
			err = hashFile(h, d, e.name, rel)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// hashFile writes one file's name, executable bits, size and content into
// h. A missing file keeps fs.ErrNotExist for callers that allow it.
func hashFile(h io.Writer, d dir, entry, name string) error {
	f, info, err := d.open(entry)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(h, "%s\x00%o\x00%d\x00", name, info.Mode().Perm()&0o111, info.Size())
	if err := d.s.copy(h, f); err != nil {
		return fileErr(d.path(entry), err)
	}
	return nil
}
