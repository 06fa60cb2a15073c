package gitsync

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/addonops/addon-operator/internal/gitserver"
)

// modulesTree is the fixture's modules/ with extra entries in it.
func modulesTree(extra ...gitserver.TreeEntry) []gitserver.TreeEntry {
	hooks := gitserver.TreeEntry{Name: "hooks", Mode: "40000", Entries: []gitserver.TreeEntry{
		{Name: "h.sh", Mode: "100755", Content: "#!/bin/sh\necho '{}'\n"},
		// a link to the checkout's root: inside, and the first link of a chain
		{Name: "top", Mode: "120000", Content: "../../.."},
	}}
	modules := append([]gitserver.TreeEntry{
		{Name: "values.yaml", Mode: "100644", Content: "global: {v: crafted}\n"},
		{Name: "001-one", Mode: "40000", Entries: []gitserver.TreeEntry{hooks}},
	}, extra...)
	return []gitserver.TreeEntry{{Name: "modules", Mode: "40000", Entries: modules}}
}

// Trees crafted past git's own checks (names holding "/", "..", ".git",
// a name twice, symlinks that each look inside but lead out as a chain)
// are refused before anything is written, on a first checkout and on one
// built from the previous revision, and nothing lands outside the
// checkout.
func TestCraftedTreesAreRefused(t *testing.T) {
	type entry = gitserver.TreeEntry
	tests := []struct {
		name  string
		extra []entry
		want  string
	}{
		{name: "chained symlinks", want: "leads out of the checkout",
			extra: []entry{{Name: "esc", Mode: "120000", Content: "001-one/hooks/top/../.."}}},
		{name: "write through a chained link", want: `"evil/pwned.sh"`, extra: []entry{
			{Name: "evil", Mode: "120000", Content: "001-one/hooks/top/../.."},
			{Name: "evil/pwned.sh", Mode: "100755", Content: "#!/bin/sh\necho pwned\n"},
		}},
		{name: "a name with a slash", want: `"002-two/values.yaml"`,
			extra: []entry{{Name: "002-two/values.yaml", Mode: "100644", Content: "two: {}\n"}}},
		{name: "a directory named ..", want: `".."`, extra: []entry{
			{Name: "..", Mode: "40000", Entries: []entry{{Name: "pwned.sh", Mode: "100755", Content: "#!/bin/sh\n"}}},
		}},
		{name: "a .git directory", want: `".git"`, extra: []entry{
			{Name: ".git", Mode: "40000", Entries: []entry{{Name: "config", Mode: "100644", Content: "[core]\n\tfsmonitor = echo pwned\n"}}},
		}},
		{name: "a .GIT file", want: `".GIT"`,
			extra: []entry{{Name: ".GIT", Mode: "100644", Content: "gitdir: /etc\n"}}},
		{name: "a name twice", want: `"values.yaml"`,
			extra: []entry{{Name: "values.yaml", Mode: "120000", Content: "001-one/hooks/h.sh"}}},
	}
	for _, from := range []string{"first checkout", "built from the previous revision"} {
		t.Run(from, func(t *testing.T) {
			f := newFixture(t)
			s := f.syncer(t, f.http.URL("addons"), "main", Auth{Username: "alice", PasswordFile: f.passFile})
			var prev *Checked[any]
			if from != "first checkout" {
				var err error
				prev, _, err = s.Sync(t.Context())
				must(t, err)
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					_, err := f.repo.CommitTree(tt.name, modulesTree(tt.extra...))
					must(t, err)
					_, changed, syncErr := s.Sync(t.Context())
					err = filepath.WalkDir(filepath.Dir(s.opts.CheckoutDir), func(p string, d fs.DirEntry, err error) error {
						if err == nil && d.Name() == "pwned.sh" {
							t.Errorf("written: %s", p)
						}
						return err
					})
					must(t, err)
					t.Log(syncErr)
					if syncErr == nil || changed || !strings.Contains(syncErr.Error(), tt.want) {
						t.Fatalf("changed = %v, err = %v; want %q", changed, syncErr, tt.want)
					}
					if cur := s.Current(); prev == nil && cur != nil || prev != nil && cur.Commit != prev.Commit {
						t.Fatalf("current moved to %+v", cur)
					}
				})
			}
			// a sound tree with the first link of the chain goes through
			sound, err := f.repo.CommitTree("sound", modulesTree())
			must(t, err)
			rev, _, err := s.Sync(t.Context())
			if err != nil || rev.Commit != sound {
				t.Fatalf("sound tree: %+v, %v", rev, err)
			}
			f.sameAsCommit(t, rev.Dir, sound)
		})
	}
}

// Names are refused on their own, NUL included (which a git tree cannot
// carry, but a name from elsewhere could).
func TestCheckName(t *testing.T) {
	for name, ok := range map[string]bool{
		"values.yaml": true, "..values": true, ".gitignore": true, "git": true, "a b": true,
		"": false, ".": false, "..": false, "a/b": false, "/": false, ".git": false, ".Git": false, "a\x00b": false,
	} {
		if err := checkName(name); (err == nil) != ok {
			t.Errorf("checkName(%q) = %v", name, err)
		}
	}
}
