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
// as text: nothing on disk can take it elsewhere.
func checkLinks(p *plan) error {
	r := &linkResolver{links: map[string]string{}, done: map[string][]string{}}
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
			return fmt.Errorf("%s: symlink to %q %w", e.path, e.target, err)
		}
	}
	return nil
}

// linkResolver resolves a revision's symlinks, each once (a chain shared
// by many links is not walked again for each).
type linkResolver struct {
	links map[string]string   // link path → target
	done  map[string][]string // link path → where it leads
}

// resolve resolves the link at path, and returns where it leads as path
// components from the root.
func (r *linkResolver) resolve(path string, hops *int) ([]string, error) {
	if at, ok := r.done[path]; ok {
		return at, nil
	}
	target := r.links[path]
	if strings.HasPrefix(target, "/") {
		return nil, errLinkOut
	}
	at := strings.Split(path, "/")
	at = at[:len(at)-1] // the link's directory
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
