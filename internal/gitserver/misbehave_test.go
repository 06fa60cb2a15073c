package gitserver

import (
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// fetchInto fetches main of url into a new bare repository.
func fetchInto(t *testing.T, url string, depth int) *git.Repository {
	t.Helper()
	r, err := git.PlainInit(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{url}}); err != nil {
		t.Fatal(err)
	}
	err = r.FetchContext(t.Context(), &git.FetchOptions{RefSpecs: []config.RefSpec{"+refs/heads/main:refs/heads/main"}, Depth: depth})
	if err != nil {
		t.Fatalf("fetch %s: %v", url, err)
	}
	return r
}

// served is the fixture repository behind a started HTTP server.
func served(t *testing.T) (*Repo, *HTTPServer) {
	t.Helper()
	root := t.TempDir()
	repo, _ := fixture(t, root)
	srv, err := StartHTTP(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return repo, srv
}

// A server told to omit an object sends a pack without it, in a shallow
// fetch and a full one alike, and the rest arrives; told nothing, it
// sends complete packs again.
func TestOmitLeavesObjectsOutOfThePack(t *testing.T) {
	repo, srv := served(t)
	head, err := runGit(repo.Bare, "rev-parse", "refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	omitted, err := runGit(repo.Bare, "rev-parse", "main:modules/001-one")
	if err != nil {
		t.Fatal(err)
	}
	kept, err := runGit(repo.Bare, "rev-parse", "main:modules/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	has := func(r *git.Repository, h string) bool {
		return r.Storer.HasEncodedObject(plumbing.NewHash(h)) == nil
	}
	for _, tc := range []struct {
		name  string
		depth int
	}{{"shallow", 1}, {"full history", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			srv.Omit("modules", omitted)
			r := fetchInto(t, srv.URL("modules"), tc.depth)
			if !has(r, head) || !has(r, kept) || has(r, omitted) {
				t.Fatalf("commit %v, kept blob %v, omitted tree %v", has(r, head), has(r, kept), has(r, omitted))
			}
			srv.Omit("modules")
			if r := fetchInto(t, srv.URL("modules"), tc.depth); !has(r, omitted) {
				t.Fatal("the object is still left out after Omit with none")
			}
		})
	}
}

// CommitTree serves names git's own commands refuse to write.
func TestCommitTreeKeepsCraftedNames(t *testing.T) {
	repo, srv := served(t)
	sha, err := repo.CommitTree("crafted", []TreeEntry{{Name: "modules", Mode: "40000", Entries: []TreeEntry{
		{Name: "a/b.sh", Mode: "100755", Content: "#!/bin/sh\n"},
		{Name: "..", Mode: "40000", Entries: []TreeEntry{{Name: "x", Mode: "100644", Content: "x"}}},
		{Name: ".git", Mode: "100644", Content: "[core]\n"},
		{Name: "link", Mode: "120000", Content: "../.."},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	r := fetchInto(t, srv.URL("modules"), 1)
	c, err := r.CommitObject(plumbing.NewHash(sha))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := c.Tree()
	if err != nil {
		t.Fatal(err)
	}
	mods, err := object.GetTree(r.Storer, tree.Entries[0].Hash)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range mods.Entries {
		names = append(names, e.Name+" "+e.Mode.String())
	}
	want := []string{".. 0040000", ".git 0100644", "a/b.sh 0100755", "link 0120000"}
	if len(names) != len(want) {
		t.Fatalf("entries = %q, want %q", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("entries = %q, want %q", names, want)
		}
	}
}
