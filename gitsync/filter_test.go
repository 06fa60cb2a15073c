package gitsync

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/addonops/addon-operator/internal/gitserver"
)

// checkedOut are the Paths of the partial-fetch tests.
var checkedOut = []string{"modules", "global-hooks"}

// noise is incompressible content of n bytes, the same for a seed.
func noise(seed uint64, n int) string {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	_, _ = r.Read(b)
	return string(b)
}

const bigSize = 512 << 10

// monorepo is a repository whose modules sit beside big files no
// checkout needs, served over HTTP with filtering (filtered) and without
// (whole), from the same directory; a copy of it (copy) allows filtering
// in its own configuration, which file:// obeys.
type monorepo struct {
	repo            *gitserver.Repo
	f               *fixture // setMain and object on repo
	filtered, whole *gitserver.HTTPServer
	copy            string
	head            string
}

func newMonorepo(t *testing.T) *monorepo {
	t.Helper()
	root := t.TempDir()
	r, err := gitserver.NewRepo(root, "mono", filepath.Join(t.TempDir(), "work"))
	must(t, err)
	m := &monorepo{repo: r, f: &fixture{repo: r}}
	must(t, r.WriteFile("modules/001-one/hooks/h.sh", "#!/bin/sh\necho '{}'\n", 0o755))
	must(t, os.MkdirAll(filepath.Join(r.Dir, "modules/002-two"), 0o755))
	must(t, os.Symlink("../001-one/hooks/h.sh", filepath.Join(r.Dir, "modules/002-two/h.sh")))
	m.head, err = r.CommitFiles("first", map[string]string{
		"modules/values.yaml":         "global: {v: 1}\n",
		"modules/001-one/values.yaml": "one: {}\n",
		"global-hooks/g.sh":           "#!/bin/sh\necho g\n",
		"README.md":                   "a monorepo\n",
		"big/data.bin":                noise(1, bigSize),
		"services/api/main.go":        "package main\n",
	})
	must(t, err)
	m.filtered, err = gitserver.StartHTTP(root, gitserver.WithFilter())
	must(t, err)
	t.Cleanup(m.filtered.Stop)
	m.whole, err = gitserver.StartHTTP(root)
	must(t, err)
	t.Cleanup(m.whole.Stop)
	m.copy = filepath.Join(t.TempDir(), "copy.git")
	for _, args := range [][]string{
		{"clone", "--quiet", "--mirror", r.Bare, m.copy},
		{"-C", m.copy, "config", "uploadpack.allowFilter", "true"},
		{"-C", m.copy, "config", "uploadpack.allowAnySHA1InWant", "true"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	return m
}

// commit commits files in the work tree and pushes to the served
// repository and its copy.
func (m *monorepo) commit(t *testing.T, msg string, files map[string]string) string {
	t.Helper()
	sha, err := m.repo.CommitFiles(msg, files)
	must(t, err)
	if out, err := exec.Command("git", "-C", m.copy, "fetch", "--quiet", m.repo.Bare, "+refs/heads/*:refs/heads/*").CombinedOutput(); err != nil {
		t.Fatalf("update the copy: %v: %s", err, out)
	}
	return sha
}

// blobsUnder lists the blobs of the commits within checkedOut.
func (m *monorepo) blobsUnder(t *testing.T, commits ...string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, c := range commits {
		b, err := exec.Command("git", append([]string{"-C", m.repo.Bare, "ls-tree", "-r", c, "--"}, checkedOut...)...).Output()
		must(t, err)
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if f := strings.Fields(line); len(f) >= 3 && f[1] == "blob" {
				out[f[2]] = true
			}
		}
	}
	return out
}

// sameWithinPaths fails the test unless dir holds exactly the commit's
// tree within checkedOut.
func (m *monorepo) sameWithinPaths(t *testing.T, dir, commit string) {
	t.Helper()
	want := map[string]string{}
	for p, d := range gitTree(t, m.repo.Bare, commit) {
		for _, c := range checkedOut {
			if p == c || strings.HasPrefix(p, c+"/") {
				want[p] = d
			}
		}
	}
	if got := diskTree(t, dir); !reflect.DeepEqual(got, want) {
		t.Fatalf("%s differs from commit %s within %v:\n got %q\nwant %q", dir, short(commit), checkedOut, got, want)
	}
}

// storeBlobs lists the blobs in the syncer's object store.
func storeBlobs(t *testing.T, s *Syncer[any]) map[string]bool {
	t.Helper()
	iter, err := storeOf(s).repo.BlobObjects()
	must(t, err)
	out := map[string]bool{}
	must(t, iter.ForEach(func(b *object.Blob) error {
		out[b.Hash.String()] = true
		return nil
	}))
	return out
}

func (m *monorepo) syncer(t *testing.T, url, ref, dir string) *Syncer[any] {
	t.Helper()
	s, err := New(Options[any]{URL: url, Ref: ref, CheckoutDir: dir, Paths: checkedOut, Require: []string{"modules"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	return s
}

// A remote that filters sends no blob outside the checked-out paths, on
// the first fetch or an incremental one, over HTTP and file://, for a
// branch or a commit SHA: the object store holds only blobs under them
// and the bytes sent stay below one big file outside; the revision still
// equals its commit within the paths, and a restart resumes it from the
// partial store. A remote that does not filter is fetched whole.
func TestPartialFetch(t *testing.T) {
	m := newMonorepo(t)
	tests := []struct {
		name    string
		url     func() string
		ref     func() string
		filters bool
		server  *gitserver.HTTPServer // counts the bytes sent (nil: file://)
	}{
		{name: "http, filtering", url: func() string { return m.filtered.URL("mono") }, ref: func() string { return "main" }, filters: true, server: m.filtered},
		{name: "http, filtering, commit SHA", url: func() string { return m.filtered.URL("mono") }, ref: func() string { return m.head }, filters: true, server: m.filtered},
		{name: "file URL, filtering", url: func() string { return "file://" + m.copy }, ref: func() string { return "main" }, filters: true},
		{name: "http, no filtering", url: func() string { return m.whole.URL("mono") }, ref: func() string { return "main" }, server: m.whole},
		{name: "file URL, no filtering", url: func() string { return "file://" + m.repo.Bare }, ref: func() string { return "main" }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := m.head
			s := m.syncer(t, tt.url(), tt.ref(), filepath.Join(t.TempDir(), "c"))
			sent := int64(0)
			if tt.server != nil {
				sent = tt.server.BytesSent()
			}
			rev, _, err := s.Sync(t.Context())
			must(t, err)
			if rev.Commit != first {
				t.Fatalf("rev = %s, want %s", rev.Commit, first)
			}
			m.sameWithinPaths(t, rev.Dir, first)
			blobs := storeBlobs(t, s)
			if tt.filters {
				if extra := slices.Sorted(maps.Keys(without(blobs, m.blobsUnder(t, first)))); len(extra) > 0 {
					t.Fatalf("blobs outside %v were fetched: %v", checkedOut, extra)
				}
			} else if len(blobs) <= len(m.blobsUnder(t, first)) {
				t.Fatalf("a remote that does not filter: the store holds %d blobs, want every blob of the commit", len(blobs))
			}
			if tt.server != nil {
				n := tt.server.BytesSent() - sent
				t.Logf("first sync: %d bytes sent", n)
				if (n < bigSize) != tt.filters {
					t.Fatalf("the server sent %d bytes; a big file outside the paths is %d", n, bigSize)
				}
			}

			// a restart resumes the revision from the partial store
			restarted, err := New(s.opts)
			must(t, err)
			if cur := restarted.Restore(t.Context()); cur == nil || cur.Commit != first {
				t.Fatalf("resumed %+v", cur)
			}
			if tt.ref() != "main" {
				return
			}

			// a commit that changes a module and big files outside
			next := m.commit(t, "module and big files", map[string]string{
				"modules/values.yaml": fmt.Sprintf("global: {v: %d}\n", 10+i),
				"big/data.bin":        noise(uint64(10+2*i), bigSize),
				"big/more.bin":        noise(uint64(11+2*i), bigSize),
			})
			t.Cleanup(func() { m.head = next })
			if tt.server != nil {
				sent = tt.server.BytesSent()
			}
			rev, _, err = restarted.Sync(t.Context())
			must(t, err)
			if rev.Commit != next {
				t.Fatalf("rev = %s, want %s", rev.Commit, next)
			}
			m.sameWithinPaths(t, rev.Dir, next)
			added := slices.Sorted(maps.Keys(without(storeBlobs(t, restarted), blobs)))
			want := slices.Sorted(maps.Keys(without(m.blobsUnder(t, next), m.blobsUnder(t, first))))
			if tt.filters && !slices.Equal(added, want) {
				t.Fatalf("the incremental fetch brought blobs %v, want only the new module blob %v", added, want)
			}
			if !tt.filters && len(added) != 3 {
				t.Fatalf("a remote that does not filter: the incremental fetch brought %d blobs, want 3", len(added))
			}
			if tt.server != nil {
				n := tt.server.BytesSent() - sent
				t.Logf("incremental sync: %d bytes sent", n)
				if (n < bigSize) != tt.filters {
					t.Fatalf("the server sent %d bytes; a big file outside the paths is %d", n, bigSize)
				}
			}
		})
	}
}

// without is a less the keys of b.
func without(a, b map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		if !b[k] {
			out[k] = true
		}
	}
	return out
}

// Through a remote that filters, the object-completeness checks hold: a
// blob or tree under the paths that the remote leaves out of its packs,
// on the first fetch or a later one, refuses the revision naming it and
// its path (blobs outside the paths are never missed), and once the
// remote sends them the commit is published.
func TestPartialFetchIsComplete(t *testing.T) {
	m := newMonorepo(t)
	next := m.commit(t, "add three", map[string]string{
		"modules/003-three/values.yaml": "three: {}\n",
		"big/data.bin":                  noise(4, bigSize),
	})
	tests := []struct {
		name, path string
		first      bool // the syncer has no revision yet
	}{
		{name: "a tree on the first fetch", path: "modules/001-one/hooks", first: true},
		{name: "a file on the first fetch", path: "modules/001-one/hooks/h.sh", first: true},
		{name: "a symlink on the first fetch", path: "modules/002-two/h.sh", first: true},
		{name: "a new module's tree", path: "modules/003-three"},
		{name: "a new file", path: "modules/003-three/values.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := m.f
			f.setMain(t, m.head)
			s := m.syncer(t, m.filtered.URL("mono"), "main", filepath.Join(t.TempDir(), "c"))
			var prev *Checked[any]
			if !tt.first {
				var err error
				prev, _, err = s.Sync(t.Context())
				must(t, err)
			}
			f.setMain(t, next)
			obj := f.object(t, next, tt.path)
			m.filtered.Omit("mono", obj)
			t.Cleanup(func() { m.filtered.Omit("mono") })
			_, changed, err := s.Sync(t.Context())
			if err == nil || changed {
				t.Fatalf("a pack without %s (%s) was accepted", tt.path, obj)
			}
			if !strings.Contains(err.Error(), obj) || !strings.Contains(err.Error(), tt.path) {
				t.Fatalf("the error does not name the object and its path: %v", err)
			}
			if cur := s.Current(); (prev == nil) != (cur == nil) || prev != nil && cur.Commit != prev.Commit {
				t.Fatalf("current = %+v, want %+v", cur, prev)
			}

			m.filtered.Omit("mono")
			rev, changed, err := s.Sync(t.Context())
			if err != nil || !changed || rev.Commit != next {
				t.Fatalf("with whole packs again: %+v, %v, %v", rev, changed, err)
			}
			m.sameWithinPaths(t, rev.Dir, next)
			if extra := without(storeBlobs(t, s), m.blobsUnder(t, m.head, next)); len(extra) > 0 {
				t.Fatalf("blobs outside %v were fetched: %v", checkedOut, extra)
			}
		})
	}
}

// Signatures are checked through a remote that filters (they need only
// the commit): a commit signed by a trusted key is published, an unsigned
// one is refused before any of its blobs is fetched.
func TestPartialFetchVerifiesSignatures(t *testing.T) {
	m := newMonorepo(t)
	keys := t.TempDir()
	home, fpr, err := gitserver.NewSigningKey(t.TempDir(), "release@example.com", filepath.Join(keys, "release.asc"))
	must(t, err)
	m.repo.SignWith(home, fpr)
	signed := m.commit(t, "signed", map[string]string{"modules/values.yaml": "global: {v: signed}\n", "big/data.bin": noise(5, bigSize)})
	s, err := New(Options[any]{URL: m.filtered.URL("mono"), Ref: "main", CheckoutDir: filepath.Join(t.TempDir(), "c"), Paths: checkedOut,
		VerifyKeysDir: keys, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	rev, _, err := s.Sync(t.Context())
	if err != nil || rev.Commit != signed {
		t.Fatalf("signed by a trusted key: %+v, %v", rev, err)
	}
	m.sameWithinPaths(t, rev.Dir, signed)
	if extra := without(storeBlobs(t, s), m.blobsUnder(t, signed)); len(extra) > 0 {
		t.Fatalf("blobs outside %v were fetched: %v", checkedOut, extra)
	}

	m.repo.SignWith("", "")
	unsigned := m.commit(t, "unsigned", map[string]string{"modules/values.yaml": "global: {v: unsigned}\n"})
	uploads := m.filtered.UploadPackRequests()
	_, changed, err := s.Sync(t.Context())
	if err == nil || changed || !strings.Contains(err.Error(), "is not signed") {
		t.Fatalf("unsigned: changed = %v, err = %v", changed, err)
	}
	if n := m.filtered.UploadPackRequests() - uploads; n != 1 {
		t.Fatalf("the unsigned commit took %d upload-pack requests, want 1 (its trees; none for its blobs)", n)
	}
	if storeBlobs(t, s)[m.f.object(t, unsigned, "modules/values.yaml")] {
		t.Fatal("the unsigned commit's blob was fetched")
	}
}

// A blob under the paths over MaxFileSize refuses the revision for the
// limit, and a remote that filters is not asked for it again at every
// sync, whether the fetch left it out whole (its size known) or as a delta
// on another one (its hash unknown): it would be left out again.
func TestPartialFetchOverTheLimitIsNotAskedAgain(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
	}{
		{name: "a file", files: map[string]string{"modules/big.yaml": strings.Repeat("x", 2000)}},
		{name: "two similar files, one a delta", files: map[string]string{
			"modules/big.yaml":  strings.Repeat("x", 2000),
			"modules/big2.yaml": strings.Repeat("x", 1999) + "y",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMonorepo(t)
			m.commit(t, tt.name, tt.files)
			s, err := New(Options[any]{URL: m.filtered.URL("mono"), Ref: "main", CheckoutDir: filepath.Join(t.TempDir(), "c"), Paths: checkedOut,
				MaxFileSize: 1000, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			must(t, err)
			for round := range 2 {
				uploads := m.filtered.UploadPackRequests()
				_, _, err := s.Sync(t.Context())
				if err == nil || !strings.Contains(err.Error(), "modules/big") || !strings.Contains(err.Error(), "1000 B") {
					t.Fatalf("round %d: err = %v", round, err)
				}
				if n := m.filtered.UploadPackRequests() - uploads; round == 1 && n != 0 {
					t.Fatalf("the second sync of the refused commit made %d upload-pack requests, want 0", n)
				}
			}
		})
	}
}

// A store filled by partial fetches serves what comes next: wider paths
// get their blobs at the next sync (and nothing else), and a remote that stops filtering
// still gets its commits published, even one that moves content from
// outside the paths into them (a blob a commit the store has names, but
// the store lacks).
func TestPartialStoreAfterChanges(t *testing.T) {
	m := newMonorepo(t)
	dir := filepath.Join(t.TempDir(), "c")
	opts := Options[any]{URL: m.filtered.URL("mono"), Ref: "main", CheckoutDir: dir, Paths: []string{"modules"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s, err := New(opts)
	must(t, err)
	_, _, err = s.Sync(t.Context())
	must(t, err)
	hook := m.f.object(t, m.head, "global-hooks/g.sh")
	if storeBlobs(t, s)[hook] {
		t.Fatal("a blob outside the paths was fetched")
	}

	opts.Paths = checkedOut
	s, err = New(opts)
	must(t, err)
	uploads := m.filtered.UploadPackRequests()
	rev, _, err := s.Sync(t.Context())
	must(t, err)
	m.sameWithinPaths(t, rev.Dir, m.head)
	if !storeBlobs(t, s)[hook] {
		t.Fatal("the blob of the wider paths is not in the store")
	}
	if n := m.filtered.UploadPackRequests() - uploads; n != 1 {
		t.Fatalf("wider paths took %d upload-pack requests, want 1 (their blobs)", n)
	}

	opts.URL = m.whole.URL("mono")
	s, err = New(opts)
	must(t, err)
	s.Restore(t.Context())
	for _, files := range []map[string]string{
		{"modules/values.yaml": "global: {v: whole}\n"},
		{"modules/moved.bin": noise(1, bigSize)}, // the content of big/data.bin, whose blob the store lacks
	} {
		next := m.commit(t, "after filtering", files)
		rev, _, err := s.Sync(t.Context())
		must(t, err)
		if rev.Commit != next {
			t.Fatalf("rev = %s, want %s", rev.Commit, next)
		}
		m.sameWithinPaths(t, rev.Dir, next)
	}
}
