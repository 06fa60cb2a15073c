package gitsync

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// gitTree describes a commit's tree as git itself reads it: each
// directory, each file with its executable bit and content, each symlink
// with its target.
func gitTree(t *testing.T, bare, commit string) map[string]string {
	t.Helper()
	git := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", bare}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return out
	}
	out := map[string]string{}
	for _, rec := range bytes.Split(git("ls-tree", "-r", "-t", "-z", "--full-tree", commit), []byte{0}) {
		meta, p, ok := strings.Cut(string(rec), "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta) // mode type hash
		switch f[0] {
		case "040000":
			out[p] = "dir"
		case "120000":
			out[p] = "link " + string(git("cat-file", "blob", f[2]))
		case "100755":
			out[p] = "exec " + string(git("cat-file", "blob", f[2]))
		case "100644":
			out[p] = "file " + string(git("cat-file", "blob", f[2]))
		}
	}
	return out
}

// diskTree describes a checkout the way gitTree describes a commit.
func diskTree(t *testing.T, root string) map[string]string {
	return describeTree(t, root, func(info fs.FileInfo, b []byte) string {
		if info.Mode()&0o111 != 0 {
			return "exec " + string(b)
		}
		return "file " + string(b)
	})
}

// describeTree lists a checkout: each directory, each symlink with its
// target, each regular file as file describes it, anything else by mode.
func describeTree(t *testing.T, root string, file func(fs.FileInfo, []byte) string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			out[rel] = "dir"
		case info.Mode()&fs.ModeSymlink != 0:
			link, _ := os.Readlink(p)
			out[rel] = "link " + link
		case info.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			out[rel] = file(info, b)
		default:
			out[rel] = "other " + info.Mode().String()
		}
		return nil
	})
	must(t, err)
	return out
}

// sameAsCommit fails the test unless dir holds exactly the commit's tree.
func (f *fixture) sameAsCommit(t *testing.T, dir, commit string) {
	t.Helper()
	if got, want := diskTree(t, dir), gitTree(t, f.repo.Bare, commit); !reflect.DeepEqual(got, want) {
		t.Fatalf("%s differs from commit %s:\n got %q\nwant %q", dir, short(commit), got, want)
	}
}

// tamper edits a revision as a careless hook could: a file overwritten in
// place, same size and mode (the inode the next revision would link), and
// a file added.
func tamper(t *testing.T, dir string) {
	t.Helper()
	h := filepath.Join(dir, "modules/001-one/hooks/h.sh")
	st, err := os.Stat(h)
	must(t, err)
	must(t, os.Chmod(h, 0o700)) // read-only files take a chmod first (root needs none)
	out, err := os.OpenFile(h, os.O_WRONLY, 0)
	must(t, err)
	_, err = out.WriteAt([]byte("evil"), int64(len("#!/bin/sh\n")))
	must(t, err)
	must(t, out.Close())
	must(t, os.Chmod(h, st.Mode().Perm()))
	must(t, os.WriteFile(filepath.Join(dir, "modules/001-one/hooks/extra.sh"), []byte("#!/bin/sh\n"), 0o755))
}

// A revision equals its commit's tree whatever happened to the revision it
// is built from, a revision folder already on disk for the wanted commit
// is rebuilt when it differs, and a restart re-checks the files it resumes.
func TestRevisionsEqualTheirCommit(t *testing.T) {
	f := newFixture(t)
	s := f.syncer(t, f.http.URL("addons"), "main", Auth{Username: "alice", PasswordFile: f.passFile})
	first, _, err := s.Sync(t.Context())
	must(t, err)
	tamper(t, first.Dir)

	// built from the tampered revision: h.sh is unchanged in git
	next := f.commit(t, "values only", map[string]string{"modules/values.yaml": "global: {v: 10}\n"})
	rev, _, err := s.Sync(t.Context())
	must(t, err)
	if rev.Commit != next {
		t.Fatalf("rev = %s", rev.Commit)
	}
	f.sameAsCommit(t, rev.Dir, next)

	// back to the first commit, whose (tampered) folder is still on disk
	_, err = f.repo.Git("reset", "--hard", first.Commit)
	must(t, err)
	must(t, f.repo.Push())
	rev, _, err = s.Sync(t.Context())
	must(t, err)
	if rev.Commit != first.Commit {
		t.Fatalf("rev = %s", rev.Commit)
	}
	f.sameAsCommit(t, rev.Dir, first.Commit)

	// a restart resumes the revision on disk only as its commit has it
	tamper(t, rev.Dir)
	restarted, err := New(s.opts)
	must(t, err)
	resumed := restarted.Restore(t.Context())
	if resumed == nil || resumed.Commit != first.Commit {
		t.Fatalf("resumed %+v", resumed)
	}
	f.sameAsCommit(t, resumed.Dir, first.Commit)
}

// A revision an earlier version wrote (writable files, no manifest) is
// checked file by file when it is resumed, and written anew to the modes
// of now; its files are not trusted for a stat they were never recorded
// with.
func TestRestoreRewritesAnEarlierLayout(t *testing.T) {
	f := newFixture(t)
	s := f.syncer(t, "file://"+f.repo.Bare, "main", Auth{})
	rev, _, err := s.Sync(t.Context())
	must(t, err)
	err = filepath.WalkDir(rev.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.Chmod(p, info.Mode().Perm()|0o200)
	})
	must(t, err)
	must(t, os.RemoveAll(filepath.Join(s.opts.CheckoutDir, "manifests")))
	must(t, os.Mkdir(filepath.Join(s.opts.CheckoutDir, "manifests"), 0o700))

	restarted, err := New(s.opts)
	must(t, err)
	resumed := restarted.Restore(t.Context())
	if resumed == nil || resumed.Commit != rev.Commit {
		t.Fatalf("resumed %+v", resumed)
	}
	f.sameAsCommit(t, resumed.Dir, rev.Commit)
	for p, want := range map[string]os.FileMode{"modules/values.yaml": 0o444, "modules/001-one/hooks/h.sh": 0o555} {
		info, err := os.Stat(filepath.Join(resumed.Dir, p))
		must(t, err)
		if info.Mode().Perm() != want {
			t.Fatalf("%s: mode %v, want %v", p, info.Mode().Perm(), want)
		}
	}
	if _, err := os.Stat(filepath.Join(s.opts.CheckoutDir, "manifests", rev.Commit)); err != nil {
		t.Fatalf("no manifest written: %v", err)
	}
}
