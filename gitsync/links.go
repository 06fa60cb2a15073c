package gitsync

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// maxLinkHops bounds the symlinks followed to resolve one, as the
// kernel's ELOOP does.
const maxLinkHops = 40

var (
	errLinkOut  = errors.New("leads out of the checkout")
	errLinkLoop = errors.New("is a loop of symlinks")
)

// checkLinks refuses a revision with a symlink that leads out of the
// checkout. Comparing paths as text is not enough: a link that looks
// inside can lead out through another one ("a -> top/.." where "top ->
// ../.."), so each target is resolved step by step as the kernel would,
// following the revision's own links, and must never go above the root.
// A path the revision does not hold (outside Paths, or absent) resolves
// as text: nothing on disk can take it elsewhere. A target beneath alias
// (Options.RootAlias) starts again at the root, as the loader reads it.
func checkLinks(p *plan, alias string) error {
	r := &linkResolver{links: map[string]string{}, done: map[string][]string{}, alias: alias}
	for _, e := range p.entries {
		if e.kind == kindLink {
			r.links[e.path] = e.target
		}
	}
	for _, e := range p.entries {
		if e.kind != kindLink {
			continue
		}
		hops := 0
		if _, err := r.resolve(e.path, &hops); err != nil {
			return fmt.Errorf("%s: symlink to %q %w%s", e.path, e.target, err, aliasHint(alias, e.target))
		}
	}
	return nil
}

// linkResolver resolves a revision's symlinks, each once (a chain shared
// by many links is not walked again for each).
type linkResolver struct {
	links map[string]string   // link path → target
	done  map[string][]string // link path → where it leads
	alias string
}

// aliasHint says, for a refused absolute target, what RootAlias does.
func aliasHint(alias, target string) string {
	switch {
	case !strings.HasPrefix(target, "/"):
		return ""
	case alias == "":
		return " (an absolute target: --tree-root-alias, ADDON_OPERATOR_TREE_ROOT_ALIAS, maps an image's prefix such as /deckhouse onto the repository's root)"
	case target != alias && !strings.HasPrefix(target, alias+"/"):
		return " (an absolute target not beneath the tree root alias " + alias + ")"
	}
	return " (through the tree root alias " + alias + ")"
}

// resolve resolves the link at path, and returns where it leads as path
// components from the root.
func (r *linkResolver) resolve(path string, hops *int) ([]string, error) {
	if at, ok := r.done[path]; ok {
		return at, nil
	}
	target := r.links[path]
	at := strings.Split(path, "/")
	at = at[:len(at)-1] // the link's directory
	if strings.HasPrefix(target, "/") {
		rest, ok := strings.CutPrefix(target, r.alias+"/")
		if r.alias != "" && target == r.alias {
			// the alias itself is the root, as the loader maps it
			// (loader/alias.go): not a directory named after it
			rest, ok = "", true
		}
		if r.alias == "" || !ok {
			return nil, errLinkOut
		}
		at, target = nil, rest
	}
	for _, c := range strings.Split(target, "/") {
		switch c {
		case "", ".":
		case "..":
			if len(at) == 0 {
				return nil, errLinkOut
			}
			at = at[:len(at)-1]
		default:
			at = append(at, c)
			next := strings.Join(at, "/")
			if _, ok := r.links[next]; !ok {
				continue
			}
			if *hops++; *hops > maxLinkHops {
				return nil, errLinkLoop
			}
			resolved, err := r.resolve(next, hops)
			if err != nil {
				return nil, err
			}
			at = slices.Clone(resolved)
		}
	}
	r.done[path] = at
	return at, nil
}
