package loader

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
)

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
	return hashDir(h, d, "", false, map[fileID]bool{})
}

// hashDir hashes d as prefix. ancestors are the directories being hashed
// above it: a link back up to one of them is hashed as a marker rather
// than followed for ever. Beneath a testdata/ directory (Go tests'
// fixtures, which no hook or chart reads: docs/operator.md, "Which files
// are hooks") a broken link is hashed as its target rather than refused:
// git cannot hold the empty directory such a link often points to.
func hashDir(h io.Writer, d dir, prefix string, testdata bool, ancestors map[fileID]bool) error {
	id, des, err := d.readDir()
	if err != nil {
		return err
	}
	if ancestors[id] {
		fmt.Fprintf(h, "%s\x00loop\x00", prefix)
		return nil
	}
	ancestors[id] = true
	defer delete(ancestors, id)
	for _, de := range des {
		rel := filepath.Join(prefix, de.Name())
		e, err := d.resolve(de)
		var broken *brokenLinkError
		switch {
		case testdata && errors.As(err, &broken):
			fmt.Fprintf(h, "%s\x00link\x00%s\x00", rel, broken.target)
			continue
		case err != nil:
			return err
		}
		if e.isDir {
			err = hashDir(h, d.sub(e.name), rel, testdata || e.name == "testdata", ancestors)
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
