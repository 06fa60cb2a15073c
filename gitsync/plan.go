package gitsync

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"golang.org/x/sys/unix"
)

type entryKind uint8

const (
	kindDir entryKind = iota
	kindFile
	kindExec
	kindLink
)

// planEntry is one entry of a revision.
type planEntry struct {
	path   string // slash-separated, from the revision's root
	kind   entryKind
	hash   plumbing.Hash
	size   int64
	target string // a symlink's
}

// perm is the mode a file is written with: read-only, so that a hook
// writing to its own files (whose inodes later revisions share) fails
// rather than changing them; the checks on reuse do not rely on it.
func (e planEntry) perm() uint32 {
	if e.kind == kindExec {
		return 0o555
	}
	return 0o444
}

// statMode is the st_mode of the entry's file.
func (e planEntry) statMode() uint32 { return unix.S_IFREG | e.perm() }

// plan is what a revision must hold: the commit's tree within Paths,
// parents before children. Building it reads every tree object, and the
// header of every blob not already on disk (known: the manifest of the
// revision the checkout takes files from, whose files are then checked
// against the blob's hash before they are used), so a revision is refused
// before anything is written when an object is missing, a name or symlink
// is unsafe, or a limit is crossed.
type plan struct {
	entries  []planEntry
	index    map[string]int      // path → entry
	children map[string][]string // directory ("" is the root) → its names
	bytes    int64
	known    *manifest // sizes of blobs on disk already (nil: none)
	// missing, when set, makes the walk a survey (missingBlobs): no blob
	// is read, and those the store lacks are listed here
	missing map[plumbing.Hash]bool
}

// planner plans a revision of a tree within Paths, and surveys a tree
// for the blobs a filtered fetch left out (missingBlobs), refusing what
// a checkout would refuse either way.
type planner struct {
	objects objectReader
	why     explainer
	limits  limits
	paths   []string // Options.Paths, cleaned
	alias   string   // Options.RootAlias, cleaned ("": none)
}

var (
	_ planning = (*planner)(nil)
	_ surveyor = (*planner)(nil)
)

// objectReader is what planning and writing a revision read from the
// object store.
type objectReader interface {
	has(h plumbing.Hash) (bool, error)
	blob(h plumbing.Hash) (plumbing.EncodedObject, error)
	tree(h plumbing.Hash) (*object.Tree, error)
}

// explainer says why the store did not give an object a revision needs:
// a fetch left it out for a limit, or the store is damaged (dropped).
type explainer interface {
	objectErr(kind string, h plumbing.Hash, path string, err error) error
}

// planTree plans a revision of the tree.
func (pl *planner) planTree(tree *object.Tree, known *manifest) (*plan, error) {
	p := &plan{index: map[string]int{}, children: map[string][]string{"": {}}, known: known}
	if err := pl.walk(p, tree, ""); err != nil {
		return nil, err
	}
	if err := checkLinks(p, pl.alias); err != nil {
		return nil, err
	}
	return p, nil
}

// survey walks the tree as planTree does but reads no blob: it lists
// those the store lacks.
func (pl *planner) survey(tree *object.Tree) (map[plumbing.Hash]bool, error) {
	p := &plan{index: map[string]int{}, children: map[string][]string{"": {}}, missing: map[plumbing.Hash]bool{}}
	if err := pl.walk(p, tree, ""); err != nil {
		return nil, err
	}
	return p.missing, nil
}

// walk adds the entries of the tree at dir.
func (pl *planner) walk(p *plan, tree *object.Tree, dir string) error {
	seen := make(map[string]bool, len(tree.Entries))
	for _, te := range tree.Entries {
		name := te.Name
		if dir != "" {
			name = dir + "/" + te.Name
		}
		if !pl.wanted(name) && !(te.Mode == filemode.Dir && pl.leadsToWanted(name)) || te.Mode == filemode.Submodule {
			continue
		}
		if err := checkName(te.Name); err != nil {
			return fmt.Errorf("%s: entry %q refused: %w", displayPath(dir), te.Name, err)
		}
		if len(name) > maxPath { // and a deep tree costs memory as the square of its depth
			return fmt.Errorf("%s: entry %q refused: a path over %d bytes", displayPath(dir), te.Name, maxPath)
		}
		if seen[te.Name] {
			return fmt.Errorf("%s: entry %q appears twice", displayPath(dir), te.Name)
		}
		seen[te.Name] = true
		e := planEntry{path: name, hash: te.Hash}
		switch te.Mode {
		case filemode.Dir:
			e.kind = kindDir
		case filemode.Regular, filemode.Deprecated:
			e.kind = kindFile
		case filemode.Executable:
			e.kind = kindExec
		case filemode.Symlink:
			e.kind = kindLink
		default:
			return fmt.Errorf("%s: entry %q has mode %s, which git does not write", displayPath(dir), te.Name, te.Mode)
		}
		if err := pl.add(p, e); err != nil {
			return err
		}
	}
	return nil
}

// add checks one entry and adds it (a directory with what it holds).
func (pl *planner) add(p *plan, e planEntry) error {
	var sub *object.Tree
	var err error
	switch {
	case e.kind == kindDir:
		if sub, err = pl.objects.tree(e.hash); err != nil {
			return pl.why.objectErr("tree", e.hash, e.path, err)
		}
	case p.missing != nil:
		here, err := pl.objects.has(e.hash)
		if err != nil {
			return err
		}
		if !here {
			p.missing[e.hash] = true
		}
	case e.kind == kindLink:
		if e.target, err = pl.linkTarget(e); err != nil {
			return err
		}
	default:
		if err := pl.sizeFile(p, &e); err != nil {
			return err
		}
	}
	p.index[e.path] = len(p.entries)
	p.entries = append(p.entries, e)
	parent, base := splitPath(e.path)
	p.children[parent] = append(p.children[parent], base)
	if over(int64(len(p.entries)), int64(pl.limits.files)) {
		return &limitError{path: e.path, what: fmt.Sprintf("the checked-out paths hold more than %d files, symlinks and directories, the limit", pl.limits.files)}
	}
	if sub == nil {
		return nil
	}
	p.children[e.path] = []string{}
	return pl.walk(p, sub, e.path)
}

// sizeFile takes a file's size from the revision on disk that holds its
// blob, or else from its object's header, before any of its content, and
// checks it against the limits.
func (pl *planner) sizeFile(p *plan, e *planEntry) error {
	if f, ok := p.known.file(e.path); ok && f.blob == e.hash {
		e.size = f.size
	} else {
		n, err := pl.blobSize(e.hash)
		if err != nil {
			return pl.why.objectErr("blob", e.hash, e.path, err)
		}
		e.size = n
	}
	if err := pl.fileLimit(e.path, e.size); err != nil {
		return err
	}
	n := e.size
	p.bytes += n
	if over(p.bytes, pl.limits.checkoutSize) {
		return &limitError{path: e.path, what: fmt.Sprintf("the checked-out paths hold more than %s of files, the limit", size(pl.limits.checkoutSize))}
	}
	return nil
}

// fileLimit refuses a file over MaxFileSize.
func (pl *planner) fileLimit(path string, n int64) error {
	if over(n, pl.limits.fileSize) {
		return &limitError{path: path, what: fmt.Sprintf("a file of %s, over the limit of %s per file", size(n), size(pl.limits.fileSize))}
	}
	return nil
}

// blobSize reads a blob's size without its content: go-git reads a big
// object's size from its pack header (a delta's from the delta's header),
// and a small one (16 KiB packed) whole, which costs less than the
// loose-object lookup EncodedObjectSize makes first, a dozen system calls.
func (pl *planner) blobSize(h plumbing.Hash) (int64, error) {
	obj, err := pl.objects.blob(h)
	if err != nil {
		return 0, err
	}
	return obj.Size(), nil
}

// linkTarget reads a symlink's target (bounded: it is read whole).
func (pl *planner) linkTarget(e planEntry) (string, error) {
	obj, err := pl.objects.blob(e.hash)
	if err != nil {
		return "", pl.why.objectErr("blob", e.hash, e.path, err)
	}
	if n := obj.Size(); n > maxLinkTarget || n == 0 {
		return "", fmt.Errorf("%s: a symlink whose target is %d bytes long", e.path, n)
	}
	r, err := obj.Reader()
	if err != nil {
		return "", pl.why.objectErr("blob", e.hash, e.path, err)
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, maxLinkTarget))
	if err != nil {
		return "", pl.why.objectErr("blob", e.hash, e.path, err)
	}
	if strings.ContainsRune(string(b), 0) {
		return "", fmt.Errorf("%s: a symlink whose target holds NUL", e.path)
	}
	return string(b), nil
}

// dirs lists the revision's directories, each before those it holds; the
// root is "".
func (p *plan) dirs() []string {
	out := []string{""}
	for _, e := range p.entries {
		if e.kind == kindDir {
			out = append(out, e.path)
		}
	}
	return out
}

// wanted: the path is one of the checked-out subtrees, or under one.
func (pl *planner) wanted(name string) bool {
	if len(pl.paths) == 0 {
		return true
	}
	for _, p := range pl.paths {
		if name == p || strings.HasPrefix(name, p+"/") {
			return true
		}
	}
	return false
}

// leadsToWanted: the directory holds one of the checked-out subtrees.
func (pl *planner) leadsToWanted(dir string) bool {
	for _, p := range pl.paths {
		if strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// cleanPaths normalizes Options.Paths; a path naming the whole tree makes
// the list empty (everything is wanted).
func cleanPaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		p = strings.Trim(filepath.ToSlash(filepath.Clean(p)), "/")
		if p == "." || p == "" {
			return nil
		}
		out = append(out, p)
	}
	return out
}

// splitPath splits a slash-separated path into its directory ("" at the
// root) and its last name.
func splitPath(p string) (string, string) {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return "", p
}

// digest is a SHA-256 of the plan's entries in path order (path, kind,
// blob, link target): equal for two commits whose checkouts are equal.
func (p *plan) digest() string {
	entries := slices.Clone(p.entries)
	slices.SortFunc(entries, func(a, b planEntry) int { return strings.Compare(a.path, b.path) })
	h := sha256.New()
	for _, e := range entries {
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00%s\n", e.path, e.kind, e.hash, e.target)
	}
	return hex.EncodeToString(h.Sum(nil))
}
