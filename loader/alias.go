package loader

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A tree built for an image names its own files by absolute paths: a
// chart's charts/helm_lib -> /deckhouse/helm_lib/..., a schema's $ref to
// /deckhouse/candi/openapi/.... In git that prefix means the repository's
// root. WithTreeRootAlias maps it onto the tree's root; the root still
// bounds every read (os.Root), so a mapped path that leads out of it (..
// after the alias, or a chain of links) is refused as any other
// (docs/security.md, "Reading a tree"; docs/operator.md, "Trees from git").

// WithTreeRootAlias reads absolute symlink targets and $ref paths beneath
// prefix (such as /deckhouse) as the same paths beneath the tree's root.
// It needs a tree root (Load's root); "" maps nothing.
func WithTreeRootAlias(prefix string) Option {
	return func(l *Loader) {
		if prefix != "" {
			l.alias = filepath.Clean(prefix)
		}
	}
}

// TreeRootAliasSetting names the setting in errors, so a refusal tells
// the user how to map an image's absolute paths.
const TreeRootAliasSetting = "--tree-root-alias (ADDON_OPERATOR_TREE_ROOT_ALIAS)"

// unalias is the root-relative path an absolute path names through the
// alias, or false when it is not beneath it.
func unalias(alias, p string) (string, bool) {
	if alias == "" || alias == "/" || !filepath.IsAbs(p) {
		return "", false
	}
	if p == alias {
		return ".", true
	}
	rest, ok := strings.CutPrefix(p, alias+"/")
	return rest, ok
}

// maxAliasHops bounds the links followed to map one path, as the
// kernel's ELOOP does.
const maxAliasHops = 40

// aliased resolves name (relative to r) link by link, as the kernel would,
// reading a link whose target is beneath the alias as the same path
// beneath the root. It answers false when there is nothing to map or the
// path cannot be mapped inside the root (an unmapped absolute target, ..
// above the root, a loop): the caller's error from os.Root stands. The
// answer holds no link that needs the alias, and os.Root resolves it
// again, so a link swapped in since still cannot lead out.
func (s *session) aliased(r *os.Root, name string) (string, bool) {
	// only the tree's root is what the alias names; a directory that
	// bounds itself (a load with no root) maps nothing
	if s.alias == "" || s.tree.root == nil || r != s.tree.root {
		return "", false
	}
	parts := strings.Split(filepath.ToSlash(name), "/")
	var at []string
	hops, mapped := 0, false
	for len(parts) > 0 {
		c := parts[0]
		parts = parts[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(at) == 0 {
				return "", false
			}
			at = at[:len(at)-1]
			continue
		}
		next := filepath.Join(append(at, c)...)
		info, err := r.Lstat(next)
		if err != nil || info.Mode()&fs.ModeSymlink == 0 {
			at = append(at, c)
			continue
		}
		target, err := r.Readlink(next)
		if hops++; err != nil || hops > maxAliasHops {
			return "", false
		}
		if filepath.IsAbs(target) {
			rest, ok := unalias(s.alias, target)
			if !ok {
				return "", false
			}
			mapped, at = true, nil
			target = rest
		}
		parts = append(strings.Split(filepath.ToSlash(target), "/"), parts...)
	}
	if !mapped {
		return "", false
	}
	if len(at) == 0 {
		return ".", true
	}
	return filepath.Join(at...), true
}

// retry runs op on name, and again on its mapped form when it failed for
// anything but a missing file (os.Root refuses an absolute link as one
// that escapes) and the alias maps it.
func (d dir) retry(name string, op func(string) error) error {
	err := op(name)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if m, ok := d.s.aliased(d.root, name); ok {
		return op(m)
	}
	return err
}

// execPath is the path a run of entry (a file of d, as the loader opened
// it: opened) gives the kernel. The kernel, not os.Root, resolves an exec'd
// path: through a link beneath the alias it would follow /deckhouse/... on
// the host, and run another file than the one hashed, or none. Such an
// entry runs as its real file beneath the tree's root, a path with no link
// on its way, checked to be the file that was read (docs/security.md,
// "Reading a tree"). Any other entry keeps its path in the tree: os.Root
// resolved its links inside the root, as the kernel will.
func (d dir) execPath(entry string, opened fs.FileInfo) (string, error) {
	p, mapped := d.hostPath(entry)
	if !mapped {
		return p, nil
	}
	info, err := os.Lstat(p)
	if err != nil || !os.SameFile(info, opened) {
		return "", fileErr(d.path(entry), fmt.Errorf("reached through %s=%s as %s, which is not the file read (the tree changed while loading)", TreeRootAliasSetting, d.s.alias, p))
	}
	return p, nil
}

// hostPath is entry's path on the host: its real path beneath the tree's
// root when the alias maps a link on its way (see aliased), or its path in
// the tree.
func (d dir) hostPath(entry string) (string, bool) {
	if m, ok := d.s.aliased(d.root, d.name(entry)); ok {
		return filepath.Join(d.s.tree.abs, m), true
	}
	return d.path(entry), false
}

// readAbsolute reads a file a schema $ref names by an absolute path: only
// one beneath the alias, read beneath the tree's root.
func (s *session) readAbsolute(p string) ([]byte, error) {
	switch rel, ok := unalias(s.alias, p); {
	case s.alias == "":
		return nil, fmt.Errorf("only fragments (#/definitions/...) and files beneath the openapi directory are followed; %s maps an image's absolute prefix (such as /deckhouse) onto the tree's root", TreeRootAliasSetting)
	case !ok:
		return nil, fmt.Errorf("not beneath %s=%s; only fragments, files beneath the openapi directory and files beneath the alias are followed", TreeRootAliasSetting, s.alias)
	case s.tree.root == nil:
		return nil, errors.New("an absolute path needs a tree root to map onto, and this load has none")
	default:
		return s.tree.readFile(rel)
	}
}

// linkHint says, for a link refused as leading out of the tree, what the
// alias setting would do with its target.
func (s *session) linkHint(target string) string {
	if !filepath.IsAbs(target) {
		return ""
	}
	if s.alias == "" {
		return fmt.Sprintf("; an absolute target: %s maps an image's prefix (such as /deckhouse) onto the tree's root", TreeRootAliasSetting)
	}
	if _, ok := unalias(s.alias, target); !ok {
		return fmt.Sprintf("; an absolute target not beneath %s=%s", TreeRootAliasSetting, s.alias)
	}
	return fmt.Sprintf("; mapped through %s=%s, it still leads out of the tree", TreeRootAliasSetting, s.alias)
}
