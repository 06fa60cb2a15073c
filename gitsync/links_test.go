package gitsync

import (
	"errors"
	"testing"
)

// Symlinks are resolved step by step, through each other, as the kernel
// resolves them; each must stay under the revision's root.
func TestCheckLinks(t *testing.T) {
	tests := []struct {
		name  string
		links map[string]string
		want  error
		alias string
	}{
		{"sibling", map[string]string{"m/a": "b"}, nil, ""},
		{"up to the root", map[string]string{"m/h/top": "../.."}, nil, ""},
		{"out by text", map[string]string{"m/a": "../../x"}, errLinkOut, ""},
		{"absolute", map[string]string{"m/a": "/etc/passwd"}, errLinkOut, ""},
		{"out through another link", map[string]string{"m/h/top": "../..", "m/esc": "h/top/.."}, errLinkOut, ""},
		{"a chain that stays in", map[string]string{"m/h/top": "../..", "m/in": "h/top/m/h"}, nil, ""},
		{"a chain of three", map[string]string{"s/a": "b/x", "s/b": "c", "s/c": "../s/.."}, nil, ""},
		// each inside as text: c is the root, so b is, and a is above it
		{"a chain of three, out", map[string]string{"s/a": "b/..", "s/b": "c", "s/c": "../s/.."}, errLinkOut, ""},
		{"a loop", map[string]string{"m/a": "b", "m/b": "a"}, errLinkLoop, ""},
		{"a link into what is not checked out", map[string]string{"m/a": "../docs/x/../y"}, nil, ""},
		// a tree built for an image: /deckhouse is the repository's root
		{"absolute, no alias", map[string]string{"m/c/helm_lib": "/deckhouse/helm_lib/charts/lib"}, errLinkOut, ""},
		{"absolute beneath the alias", map[string]string{"m/c/helm_lib": "/deckhouse/helm_lib/charts/lib"}, nil, "/deckhouse"},
		{"the alias itself", map[string]string{"m/root": "/deckhouse"}, nil, "/deckhouse"},
		{"out through a link to the alias itself", map[string]string{"m/root": "/deckhouse", "m/a": "root/.."}, errLinkOut, "/deckhouse"},
		{"through a link to the alias itself, to a link", map[string]string{"m/root": "/deckhouse", "m/a": "root/lib/x", "lib": "m/.."}, nil, "/deckhouse"},
		{"absolute, another prefix", map[string]string{"m/a": "/etc/passwd"}, errLinkOut, "/deckhouse"},
		{"a prefix of the alias", map[string]string{"m/a": "/deckhouse-other/x"}, errLinkOut, "/deckhouse"},
		{"dot-dot after the alias", map[string]string{"m/a": "/deckhouse/../etc/passwd"}, errLinkOut, "/deckhouse"},
		{"out through a link after the alias", map[string]string{"m/h/top": "../..", "m/a": "/deckhouse/m/h/top/.."}, errLinkOut, "/deckhouse"},
		{"an aliased chain that stays in", map[string]string{"lib/cur": "/deckhouse/lib/v1", "m/c/lib": "/deckhouse/lib/cur/charts"}, nil, "/deckhouse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &plan{}
			for path, target := range tt.links {
				p.entries = append(p.entries, planEntry{path: path, kind: kindLink, target: target})
			}
			if err := checkLinks(p, tt.alias); !errors.Is(err, tt.want) {
				t.Fatalf("checkLinks = %v, want %v", err, tt.want)
			}
		})
	}
}
