package gitsync

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// setMain moves main of the served repository to a commit.
func (f *fixture) setMain(t *testing.T, sha string) {
	t.Helper()
	if out, err := exec.Command("git", "-C", f.repo.Bare, "update-ref", "refs/heads/main", sha).CombinedOutput(); err != nil {
		t.Fatalf("update-ref: %v: %s", err, out)
	}
}

// object is the hash of commit:path in the served repository.
func (f *fixture) object(t *testing.T, commit, path string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", f.repo.Bare, "rev-parse", commit+":"+path).Output()
	if err != nil {
		t.Fatalf("rev-parse %s:%s: %v", commit, path, err)
	}
	return strings.TrimSpace(string(out))
}

// A server that leaves an object out of its pack gets no revision from
// it, on a first fetch or a later one: the sync names the object and its
// path, the previous revision stays current, and once the server sends
// whole packs again the commit is published complete.
func TestIncompletePackIsRefused(t *testing.T) {
	f := newFixture(t)
	auth := Auth{Username: "alice", PasswordFile: f.passFile}
	next := f.commit(t, "add two", map[string]string{
		"modules/002-two/values.yaml":  "two: {}\n",
		"modules/002-two/hooks/two.sh": "#!/bin/sh\necho two\n",
	})
	tests := []struct {
		name, path string
		first      bool // the syncer has no revision yet
	}{
		{name: "a new module's tree", path: "modules/002-two"},
		{name: "a new file", path: "modules/002-two/values.yaml"},
		{name: "a tree on the first fetch", path: "modules/001-one/hooks", first: true},
		{name: "a file on the first fetch", path: "modules/001-one/hooks/h.sh", first: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.setMain(t, f.c2)
			s := f.syncer(t, f.http.URL("addons"), "main", auth)
			var prev *Checked[any]
			if !tt.first {
				var err error
				prev, _, err = s.Sync(t.Context())
				must(t, err)
			}
			f.setMain(t, next)
			obj := f.object(t, next, tt.path)
			f.http.Omit("addons", obj)
			t.Cleanup(func() { f.http.Omit("addons") })
			_, changed, err := s.Sync(t.Context())
			if err == nil || changed {
				t.Fatalf("a pack without %s (%s) was accepted", tt.path, obj)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), obj) || !strings.Contains(err.Error(), tt.path) {
				t.Fatalf("the error does not name the object and its path: %v", err)
			}
			if cur := s.Current(); (prev == nil) != (cur == nil) || prev != nil && cur.Commit != prev.Commit {
				t.Fatalf("current = %+v, want %+v", cur, prev)
			}

			f.http.Omit("addons")
			rev, changed, err := s.Sync(t.Context())
			if err != nil || !changed || rev.Commit != next {
				t.Fatalf("with whole packs again: %+v, %v, %v", rev, changed, err)
			}
			f.sameAsCommit(t, rev.Dir, next)
		})
	}
}

// A damaged object store (pack or index files missing, cut short or
// overwritten) is started over once in a sync, and the sync succeeds; the
// next one is incremental again. The damage is found by a restarted
// operator: a running one has the index in memory and the packs open.
func TestDamagedStoreIsFetchedAgain(t *testing.T) {
	f := newFixture(t)
	auth := Auth{Username: "alice", PasswordFile: f.passFile}
	each := func(t *testing.T, store, glob string, damage func(string, []byte) error) {
		t.Helper()
		files, err := filepath.Glob(filepath.Join(store, "objects", "pack", glob))
		must(t, err)
		if len(files) == 0 {
			t.Fatalf("no %s in the store", glob)
		}
		for _, p := range files {
			b, err := os.ReadFile(p)
			must(t, err)
			must(t, os.Chmod(p, 0o600))
			must(t, damage(p, b))
		}
	}
	tests := []struct {
		name   string
		damage func(t *testing.T, store string)
	}{
		{"pack files removed", func(t *testing.T, store string) {
			each(t, store, "*.pack", func(p string, _ []byte) error { return os.Remove(p) })
		}},
		{"pack files cut short", func(t *testing.T, store string) {
			each(t, store, "*.pack", func(p string, b []byte) error { return os.Truncate(p, int64(len(b)/2)) })
		}},
		{"pack contents overwritten", func(t *testing.T, store string) {
			each(t, store, "*.pack", func(p string, b []byte) error {
				for i := 12; i < len(b)-20; i++ {
					b[i] ^= 0x5a
				}
				return os.WriteFile(p, b, 0o600)
			})
		}},
		{"index files removed", func(t *testing.T, store string) {
			each(t, store, "*.idx", func(p string, _ []byte) error { return os.Remove(p) })
		}},
		{"index files garbled", func(t *testing.T, store string) {
			each(t, store, "*.idx", func(p string, b []byte) error {
				return os.WriteFile(p, []byte(strings.Repeat("x", len(b))), 0o600)
			})
		}},
		{"objects directory removed", func(t *testing.T, store string) {
			must(t, os.RemoveAll(filepath.Join(store, "objects")))
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := f.syncer(t, f.http.URL("addons"), "main", auth)
			_, _, err := s.Sync(t.Context())
			must(t, err)
			tt.damage(t, filepath.Join(s.opts.CheckoutDir, "repo.git"))
			s, err = New(s.opts)
			must(t, err)
			s.Restore(t.Context())
			for round := range 2 {
				c := f.commit(t, tt.name, map[string]string{"modules/values.yaml": fmt.Sprintf("global: {v: %d-%d}\n", i, round)})
				uploads := f.http.UploadPackRequests()
				rev, changed, err := s.Sync(t.Context())
				if err != nil || !changed || rev.Commit != c {
					t.Fatalf("round %d: %+v, %v, %v", round, rev, changed, err)
				}
				f.sameAsCommit(t, rev.Dir, c)
				if n := f.http.UploadPackRequests() - uploads; round == 1 && n != 1 {
					t.Fatalf("the sync after the store was rebuilt made %d upload-pack requests, want 1", n)
				}
			}
		})
	}
}
