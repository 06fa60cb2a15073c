package loader

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
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
// skipping what is never a hook (notHook) and the named top-level
// directories. Names are relative to nameBase.
func findHooks(d dir, nameBase, module string, skipTop map[string]bool) ([]*Hook, error) {
	// a hooks directory reached through the alias is run in as its real
	// directory, as its hooks are (execPath)
	wd, _ := d.hostPath(".")
	f := &hookFinder{nameBase: nameBase, module: module, workingDir: wd, visited: map[fileID]bool{}}
	if err := f.walk(d, skipTop); err != nil {
		return nil, err
	}
	return f.hooks, nil
}

func (f *hookFinder) walk(d dir, skip map[string]bool) error {
	id, entries, err := d.list(func(name string) bool { return notHookName(name) || skip[name] })
	if err != nil {
		return err
	}
	if f.visited[id] {
		return nil
	}
	f.visited[id] = true
	for _, e := range entries {
		if e.isDir {
			if notHookDir[e.name] {
				continue
			}
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

// A tree pulled from git holds what an image build strips: Go sources and
// tests beside compiled hooks (often executable in git), their testdata/,
// docs. None of it is a hook, and running it with --config fails the load
// (docs/operator.md, "Which files are hooks").
var (
	notHookExt = map[string]bool{".go": true, ".md": true, ".txt": true, ".yaml": true, ".yml": true, ".json": true}
	notHookDir = map[string]bool{"testdata": true, "lib": true}
)

// notHookName: a dot entry, or a file whose extension no hook has; a
// name alone decides, so such an entry is not even resolved.
func notHookName(name string) bool {
	return strings.HasPrefix(name, ".") || notHookExt[filepath.Ext(name)]
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
	// the first bytes tell an executable image (a batch hook candidate,
	// batch.go) from a script; they are hashed like the rest
	head := make([]byte, 4)
	n, err := io.ReadFull(fh, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return fileErr(p, err)
	}
	h := sha256.New()
	h.Write(head[:n])
	if err := d.s.copy(h, fh); err != nil {
		return fileErr(p, err)
	}
	exe, err := d.execPath(name, info)
	if err != nil {
		return err
	}
	rel, _ := filepath.Rel(f.nameBase, p)
	f.hooks = append(f.hooks, &Hook{Name: rel, Path: exe, inTree: p, Module: f.module, WorkingDir: f.workingDir, Hash: hex.EncodeToString(h.Sum(nil)), image: isExecutableImage(head[:n])})
	return nil
}

// looksLikeHook: a script extension, a shebang line or an executable
// image (a batch hook without its x bit).
func looksLikeHook(path string, f *os.File) bool {
	switch filepath.Ext(path) {
	case ".sh", ".py", ".rb", ".pl", ".bash":
		return true
	}
	line, _ := bufio.NewReader(io.LimitReader(f, 256)).ReadBytes('\n')
	return bytes.HasPrefix(line, []byte("#!")) || isExecutableImage(line)
}
