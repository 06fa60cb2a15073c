package gitsync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/addonops/addon-operator/internal/gitserver"
	"github.com/addonops/addon-operator/loader"
)

type fixture struct {
	root       string
	repo       *gitserver.Repo
	http       *gitserver.HTTPServer
	ssh        *gitserver.SSHServer
	sshKey     string
	knownHosts string
	passFile   string
	c1, c2, c3 string // main: c1 (tag v1, annotated), c2 (tag light); feature: c3 (refs/pull/7/head)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{root: t.TempDir()}
	r, err := gitserver.NewRepo(f.root, "addons", filepath.Join(t.TempDir(), "work"))
	must(t, err)
	f.repo = r
	must(t, r.WriteFile("modules/values.yaml", "global: {v: 1}\n", 0))
	must(t, r.WriteFile("modules/001-one/hooks/h.sh", "#!/bin/sh\necho '{}'\n", 0o755))
	f.c1, err = r.Commit("first")
	must(t, err)
	must(t, r.AnnotatedTag("v1", "release v1"))
	must(t, r.WriteFile("modules/values.yaml", "global: {v: 2}\n", 0))
	f.c2, err = r.Commit("second")
	must(t, err)
	must(t, r.Tag("light"))
	must(t, r.Branch("feature"))
	must(t, r.WriteFile("modules/values.yaml", "global: {v: 3}\n", 0))
	f.c3, err = r.Commit("feature work")
	must(t, err)
	must(t, r.PullRef(7, f.c3))
	must(t, r.Checkout("main"))
	must(t, r.Push())

	f.http, err = gitserver.StartHTTP(f.root, gitserver.WithBasicAuth("alice", "s3cret"))
	must(t, err)
	t.Cleanup(f.http.Stop)
	f.passFile = filepath.Join(t.TempDir(), "password")
	must(t, os.WriteFile(f.passFile, []byte("s3cret\n"), 0o600))
	f.sshKey = filepath.Join(t.TempDir(), "id")
	pub, err := gitserver.NewClientKey(f.sshKey)
	must(t, err)
	f.ssh, err = gitserver.StartSSH(f.root, pub)
	must(t, err)
	t.Cleanup(f.ssh.Stop)
	f.knownHosts = filepath.Join(t.TempDir(), "known_hosts")
	must(t, f.ssh.WriteKnownHosts(f.knownHosts))
	return f
}

// commit writes and removes files, commits and pushes; it returns the commit.
func (f *fixture) commit(t *testing.T, msg string, files map[string]string, remove ...string) string {
	t.Helper()
	sha, err := f.repo.CommitFiles(msg, files, remove...)
	must(t, err)
	return sha
}

func (f *fixture) syncer(t *testing.T, url, ref string, auth Auth) *Syncer {
	t.Helper()
	s, err := New(Options{URL: url, Ref: ref, CheckoutDir: filepath.Join(t.TempDir(), "checkout"), Auth: auth,
		Require: []string{"modules"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	return s
}

func TestSyncTransportsAndRefs(t *testing.T) {
	f := newFixture(t)
	httpAuth := Auth{Username: "alice", PasswordFile: f.passFile}
	sshAuth := Auth{SSHKeyFile: f.sshKey, KnownHostsFile: f.knownHosts}
	tests := []struct {
		name, url, ref string
		auth           Auth
		want           string
	}{
		{name: "http, remote HEAD", url: f.http.URL("addons"), auth: httpAuth, want: f.c2},
		{name: "http, branch", url: f.http.URL("addons"), ref: "feature", auth: httpAuth, want: f.c3},
		{name: "ssh, annotated tag", url: f.ssh.URL("addons"), ref: "v1", auth: sshAuth, want: f.c1},
		{name: "http, lightweight tag", url: f.http.URL("addons"), ref: "light", auth: httpAuth, want: f.c2},
		{name: "file URL, pull request ref", url: "file://" + f.repo.Bare, ref: "refs/pull/7/head", want: f.c3},
		{name: "plain path, commit SHA", url: f.repo.Bare, ref: f.c1, want: f.c1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := f.syncer(t, tt.url, tt.ref, tt.auth)
			rev, changed, err := s.Sync(t.Context())
			must(t, err)
			if !changed || rev.Commit != tt.want {
				t.Fatalf("rev = %+v, changed = %v; want %s", rev, changed, tt.want)
			}
			b, err := os.ReadFile(filepath.Join(s.CurrentDir(), "modules/001-one/hooks/h.sh"))
			if err != nil || !strings.HasPrefix(string(b), "#!/bin/sh") {
				t.Fatalf("checkout: %q, %v", b, err)
			}
			st, _ := os.Stat(filepath.Join(s.CurrentDir(), "modules/001-one/hooks/h.sh"))
			if st.Mode()&0o111 == 0 {
				t.Fatal("executable bit lost")
			}
		})
	}
	t.Run("wrong password", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "pw")
		must(t, os.WriteFile(bad, []byte("nope"), 0o600))
		s := f.syncer(t, f.http.URL("addons"), "", Auth{Username: "alice", PasswordFile: bad})
		_, _, err := s.Sync(t.Context())
		if err == nil || strings.Contains(err.Error(), "nope") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("unknown host key is refused", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "known_hosts")
		must(t, os.WriteFile(other, []byte("[127.0.0.1]:1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"), 0o600))
		s := f.syncer(t, f.ssh.URL("addons"), "", Auth{SSHKeyFile: f.sshKey, KnownHostsFile: other})
		if _, _, err := s.Sync(t.Context()); err == nil {
			t.Fatal("synced from a host whose key is not known")
		}
	})
}

func TestPollFollowsBranch(t *testing.T) {
	f := newFixture(t)
	s := f.syncer(t, f.http.URL("addons"), "main", Auth{Username: "alice", PasswordFile: f.passFile})
	_, _, err := s.Sync(t.Context())
	must(t, err)
	st, _ := os.Stat(filepath.Dir(s.CurrentDir()))
	if st.Mode().Perm() != 0o700 {
		t.Fatalf("checkout dir mode = %v", st.Mode().Perm())
	}

	// an unchanged remote: no new revision and no objects fetched
	uploads := f.http.UploadPackRequests()
	_, changed, err := s.Sync(t.Context())
	must(t, err)
	if changed || f.http.UploadPackRequests() != uploads {
		t.Fatalf("unchanged poll: changed = %v, upload-pack requests %d → %d", changed, uploads, f.http.UploadPackRequests())
	}

	// a new commit on the branch: one listing and one upload-pack request
	c4 := f.commit(t, "fourth", map[string]string{"modules/values.yaml": "global: {v: 4}\n"})
	requests := f.http.Requests()
	rev, changed, err := s.Sync(t.Context())
	must(t, err)
	if n := f.http.Requests() - requests; n != 2 {
		t.Fatalf("a sync of one new commit made %d requests, want 2 (list refs, fetch)", n)
	}
	if !changed || rev.Commit != c4 || rev.Subject != "fourth" || !strings.Contains(rev.Author, "Fixture Author") {
		t.Fatalf("rev = %+v", rev)
	}

	// a force-push back to c1
	_, err = f.repo.Git("reset", "--hard", f.c1)
	must(t, err)
	must(t, f.repo.Push())
	rev, changed, err = s.Sync(t.Context())
	must(t, err)
	if !changed || rev.Commit != f.c1 {
		t.Fatalf("after force-push: %+v", rev)
	}
	// only the current and previous revisions stay on disk, once the
	// removal that follows a publish is done
	s.cleaning.Wait()
	entries, _ := os.ReadDir(filepath.Join(filepath.Dir(s.CurrentDir()), "revisions"))
	if len(entries) != 2 {
		t.Fatalf("revisions kept: %d", len(entries))
	}
	if h := s.Status().History; len(h) != 3 || h[0].Commit != f.c1 {
		t.Fatalf("history = %+v", h)
	}

	// set-ref rolls back to a tag
	s.SetRef("light")
	rev, _, err = s.Sync(t.Context())
	must(t, err)
	if rev.Commit != f.c2 {
		t.Fatalf("set-ref light: %s, want %s", rev.Commit, f.c2)
	}
}

func TestRefusedRevisionsKeepTheCurrentOne(t *testing.T) {
	f := newFixture(t)
	s := f.syncer(t, "file://"+f.repo.Bare, "main", Auth{})
	first, _, err := s.Sync(t.Context())
	must(t, err)

	refuse := func(name string, change func(), want string) {
		t.Helper()
		change()
		f.commit(t, name, nil)
		_, changed, err := s.Sync(t.Context())
		if err == nil || changed || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: changed = %v, err = %v; want %q", name, changed, err, want)
		}
		if cur := s.Current(); cur.Commit != first.Commit {
			t.Fatalf("%s: current moved to %s", name, cur.Commit)
		}
		if target, _ := os.Readlink(s.CurrentDir()); !strings.HasSuffix(target, first.Commit) {
			t.Fatalf("%s: current link = %s", name, target)
		}
		if s.Status().LastError == "" {
			t.Fatalf("%s: error not reported", name)
		}
	}
	refuse("symlink out", func() {
		must(t, os.Symlink("../../../../etc/passwd", filepath.Join(f.repo.Dir, "modules/passwd")))
	}, "leads out of the checkout")
	must(t, f.repo.Remove("modules/passwd"))

	s.opts.Validate = func(_ context.Context, dir string) (*loader.Model, error) {
		b, _ := os.ReadFile(filepath.Join(dir, "modules/values.yaml"))
		if strings.Contains(string(b), "[") {
			return nil, errors.New("modules/values.yaml: bad YAML")
		}
		return nil, nil
	}
	refuse("bad yaml", func() { must(t, f.repo.WriteFile("modules/values.yaml", "global: [\n", 0)) }, "bad YAML")
	refuse("no modules dir", func() { must(t, f.repo.Remove("modules")) }, "has no modules")

	// with the checkout limited to modules/, an escaping link elsewhere is not checked out
	limited, err := New(Options{URL: "file://" + f.repo.Bare, Ref: "main", CheckoutDir: filepath.Join(t.TempDir(), "c"),
		Paths: []string{"modules"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	must(t, os.Symlink("/etc/passwd", filepath.Join(f.repo.Dir, "outside-link")))
	f.commit(t, "link outside modules/", map[string]string{"modules/values.yaml": "global: {v: 8}\n"})
	if _, _, err := limited.Sync(t.Context()); err != nil {
		t.Fatalf("a link outside the checked-out paths refused the revision: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(limited.CurrentDir(), "outside-link")); err == nil {
		t.Fatal("a path outside Paths was checked out")
	}
	must(t, f.repo.Remove("outside-link"))

	// the next good commit is picked up
	good := f.commit(t, "fixed", map[string]string{"modules/values.yaml": "global: {v: 9}\n"})
	rev, changed, err := s.Sync(t.Context())
	if err != nil || !changed || rev.Commit != good {
		t.Fatalf("fixed: %+v, %v, %v", rev, changed, err)
	}
}

func TestServerDownThenUp(t *testing.T) {
	f := newFixture(t)
	s := f.syncer(t, f.http.URL("addons"), "main", Auth{Username: "alice", PasswordFile: f.passFile})
	first, _, err := s.Sync(t.Context())
	must(t, err)
	f.http.Stop()
	if _, _, err := s.Sync(t.Context()); err == nil {
		t.Fatal("sync with the server down succeeded")
	}
	st := s.Status()
	if st.LastError == "" || st.Current.Commit != first.Commit || strings.Contains(st.LastError, "s3cret") {
		t.Fatalf("status while down = %+v", st)
	}
	must(t, f.http.Start())
	c := f.commit(t, "while down", map[string]string{"modules/values.yaml": "global: {v: 5}\n"})
	rev, _, err := s.Sync(t.Context())
	if err != nil || rev.Commit != c || s.Status().LastError != "" {
		t.Fatalf("after the server came back: %+v, %v", rev, err)
	}
}

// scp-like URLs (git@host:path) cannot name a port, so the test server
// cannot be reached with one; that they are read as ssh is checked here.
func TestAuthForURL(t *testing.T) {
	key := filepath.Join(t.TempDir(), "id")
	_, err := gitserver.NewClientKey(key)
	must(t, err)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	must(t, os.WriteFile(kh, nil, 0o600))
	m, err := Auth{SSHKeyFile: key, KnownHostsFile: kh}.method("git@github.com:org/addons.git")
	if err != nil || m == nil || m.Name() != "ssh-public-keys" {
		t.Fatalf("scp-like: %v, %v", m, err)
	}
	if _, err := (Auth{}).method("git@github.com:org/addons.git"); err == nil || !strings.Contains(err.Error(), "GIT_SSH_KEY_FILE") {
		t.Fatalf("ssh without a key: %v", err)
	}
	tok := filepath.Join(t.TempDir(), "token")
	must(t, os.WriteFile(tok, []byte("t0k\n"), 0o600))
	m, err = Auth{TokenFile: tok}.method("https://git.example.com/x.git")
	if err != nil || m.String() != "http-basic-auth - git:*******" {
		t.Fatalf("token: %v, %v", m, err)
	}
}

func TestScrub(t *testing.T) {
	tests := map[string]string{
		"fetch https://alice:s3cret@git.example.com/x.git: 401": "fetch https://git.example.com/x.git: 401",
		"https://tok3n@host/r.git":                              "https://host/r.git",
		"ssh://git@host:22/r.git":                               "ssh://git@host:22/r.git",
		"no url here":                                           "no url here",
	}
	for in, want := range tests {
		if got := Scrub(in); got != want {
			t.Errorf("Scrub(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSignatureVerification(t *testing.T) {
	f := newFixture(t)
	keys := t.TempDir()
	trusted := filepath.Join(keys, "release.asc")
	home, fpr, err := gitserver.NewSigningKey(t.TempDir(), "release@example.com", trusted)
	must(t, err)
	otherPub := filepath.Join(t.TempDir(), "other.asc")
	otherHome, otherFpr, err := gitserver.NewSigningKey(t.TempDir(), "someone@example.com", otherPub)
	must(t, err)

	f.repo.SignWith(home, fpr)
	signed := f.commit(t, "signed release", map[string]string{"modules/values.yaml": "global: {v: signed}\n"})
	s, err := New(Options{URL: "file://" + f.repo.Bare, Ref: "main", CheckoutDir: filepath.Join(t.TempDir(), "c"),
		VerifyKeysDir: keys, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	rev, _, err := s.Sync(t.Context())
	if err != nil || rev.Commit != signed {
		t.Fatalf("signed by a trusted key: %v, %v", rev, err)
	}

	for _, tc := range []struct {
		name, home, key, want string
	}{
		{name: "unsigned", want: "is not signed"},
		{name: "unknown key", home: otherHome, key: otherFpr, want: "not signed by a trusted key"},
	} {
		f.repo.SignWith(tc.home, tc.key)
		f.commit(t, tc.name, map[string]string{"modules/values.yaml": "global: {v: " + strings.ReplaceAll(tc.name, " ", "-") + "}\n"})
		_, changed, err := s.Sync(t.Context())
		if err == nil || changed || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: changed = %v, err = %v", tc.name, changed, err)
		}
		if s.Current().Commit != signed {
			t.Fatalf("%s: the current revision moved", tc.name)
		}
	}

	// a restart re-verifies the revision on disk against the keys of now
	must(t, os.Remove(trusted))
	must(t, os.Rename(otherPub, trusted))
	restarted, err := New(Options{URL: "file://" + f.repo.Bare, Ref: "main", CheckoutDir: s.opts.CheckoutDir,
		VerifyKeysDir: keys, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	if rev := restarted.Restore(t.Context()); rev != nil {
		t.Fatalf("a revision signed by a key no longer trusted was resumed: %s", rev.Commit)
	}
}

// The revisions the running model uses (Options.InUse) stay on disk
// however many revisions are published after them; others go.
func TestRevisionsPinnedWhileInUse(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	var inUse []string
	s, err := New(Options{URL: "file://" + f.repo.Bare, Ref: "main", CheckoutDir: filepath.Join(t.TempDir(), "c"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		InUse:  func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(inUse) }})
	must(t, err)
	running, _, err := s.Sync(t.Context())
	must(t, err)
	mu.Lock()
	inUse = []string{running.Commit}
	mu.Unlock()
	var published []string
	for i := range 3 {
		f.commit(t, fmt.Sprint("publish ", i), map[string]string{"modules/values.yaml": fmt.Sprintf("global: {v: p%d}\n", i)})
		rev, _, err := s.Sync(t.Context())
		must(t, err)
		published = append(published, rev.Commit)
	}
	s.cleaning.Wait()
	exists := func(c string) bool {
		_, err := os.Stat(filepath.Join(s.opts.CheckoutDir, "revisions", c, "modules", "values.yaml"))
		return err == nil
	}
	if !exists(running.Commit) {
		t.Fatal("the running revision's files were removed")
	}
	if exists(published[0]) || !exists(published[1]) || !exists(published[2]) {
		t.Fatalf("kept: first %v, previous %v, current %v", exists(published[0]), exists(published[1]), exists(published[2]))
	}
	mu.Lock()
	inUse = nil
	mu.Unlock()
	f.commit(t, "one more", map[string]string{"modules/values.yaml": "global: {v: last}\n"})
	_, _, err = s.Sync(t.Context())
	must(t, err)
	s.cleaning.Wait()
	if exists(running.Commit) {
		t.Fatal("a revision no longer in use stayed")
	}
}

// Each revision written from the previous one equals a full checkout:
// changed files rewritten, unchanged linked, removed directories gone. A
// new Syncer on the same directory resumes from the current revision.
func TestIncrementalCheckout(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(t.TempDir(), "checkout")
	open := func() *Syncer {
		s, err := New(Options{URL: "file://" + f.repo.Bare, Ref: "main", CheckoutDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		must(t, err)
		return s
	}
	s := open()
	_, _, err := s.Sync(t.Context())
	must(t, err)
	f.commit(t, "add two", map[string]string{"modules/002-two/values.yaml": "two: {}\n", "modules/values.yaml": "global: {v: changed}\n"})
	_, _, err = s.Sync(t.Context())
	must(t, err)

	// a restarted syncer picks up where the last one left off
	s = open()
	if cur := s.Restore(t.Context()); cur == nil || cur.Subject != "add two" || s.Current().Commit != cur.Commit {
		t.Fatalf("restored current = %+v", cur)
	}
	_, changed, err := s.Sync(t.Context())
	if err != nil || changed {
		t.Fatalf("first poll after a restart: changed = %v, err = %v", changed, err)
	}
	want := f.commit(t, "remove one", map[string]string{"modules/002-two/values.yaml": "two: {x: 1}\n"}, "modules/001-one")
	rev, _, err := s.Sync(t.Context())
	must(t, err)
	if rev.Commit != want {
		t.Fatalf("rev = %s", rev.Commit)
	}
	if _, err := os.Stat(filepath.Join(rev.Dir, "modules/001-one")); !os.IsNotExist(err) {
		t.Fatalf("a removed module directory is still there: %v", err)
	}
	for p, wantContent := range map[string]string{
		"modules/values.yaml":         "global: {v: changed}\n",
		"modules/002-two/values.yaml": "two: {x: 1}\n",
	} {
		b, err := os.ReadFile(filepath.Join(rev.Dir, p))
		if err != nil || string(b) != wantContent {
			t.Fatalf("%s = %q, %v", p, b, err)
		}
	}
}

// listing describes a checkout: every path with its type, mode and
// content (or link target).
func listing(t *testing.T, root string) map[string]string {
	return describeTree(t, root, func(info fs.FileInfo, b []byte) string {
		return fmt.Sprintf("%v %q", info.Mode().Perm(), b)
	})
}

// A revision built from the previous one equals a full checkout of the
// same commit, whatever changed: contents, modes, symlinks, a file that
// became a directory, removed directories, paths outside Paths; and
// unchanged files are hard links to the previous revision's.
func TestIncrementalEqualsFullCheckout(t *testing.T) {
	f := newFixture(t)
	opts := func(dir string) Options {
		return Options{URL: "file://" + f.repo.Bare, Ref: "main", CheckoutDir: dir, Paths: []string{"modules", "global-hooks"},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	}
	kept, err := New(opts(filepath.Join(t.TempDir(), "kept")))
	must(t, err)
	step := func(t *testing.T, change func()) *Revision {
		t.Helper()
		change()
		_, err := f.repo.Commit("step")
		must(t, err)
		must(t, f.repo.Push())
		rev, _, err := kept.Sync(t.Context())
		must(t, err)
		full, err := New(opts(filepath.Join(t.TempDir(), "full")))
		must(t, err)
		fullRev, _, err := full.Sync(t.Context())
		must(t, err)
		if got, want := listing(t, rev.Dir), listing(t, fullRev.Dir); !reflect.DeepEqual(got, want) {
			t.Fatalf("incremental checkout differs from a full one:\n got %v\nwant %v", got, want)
		}
		return rev
	}
	write := func(p, c string, mode os.FileMode) { must(t, f.repo.WriteFile(p, c, mode)) }
	step(t, func() {
		write("modules/001-a/hooks/h.sh", "#!/bin/sh\n", 0o755)
		write("modules/001-a/values.yaml", "a: {}\n", 0)
		write("modules/002-b/templates/t.yaml", "kind: X\n", 0)
		write("global-hooks/g.sh", "#!/bin/sh\n", 0o755)
		write("docs/outside.md", "not checked out\n", 0)
	})
	prev := step(t, func() {
		must(t, os.Symlink("../001-a/values.yaml", filepath.Join(f.repo.Dir, "modules/002-b/values.yaml")))
		write("modules/001-a/hooks/h.sh", "#!/bin/sh\n", 0o644) // only the mode changes
		write("docs/outside.md", "changed outside\n", 0)
	})
	rev := step(t, func() {
		must(t, f.repo.Remove("modules/001-a/values.yaml"))
		write("modules/001-a/values.yaml/now-a-dir.yaml", "x: 1\n", 0)
		must(t, f.repo.Remove("modules/002-b/values.yaml"))
		must(t, f.repo.Remove("global-hooks"))
		write("modules/003-c/values.yaml", "c: {}\n", 0)
	})
	a, err := os.Stat(filepath.Join(prev.Dir, "modules/002-b/templates/t.yaml"))
	must(t, err)
	b, err := os.Stat(filepath.Join(rev.Dir, "modules/002-b/templates/t.yaml"))
	must(t, err)
	if !os.SameFile(a, b) {
		t.Fatal("an unchanged file was written again instead of linked")
	}
}

// A commit that brings back content from behind the shallow first fetch
// (a revert to a file's old version) still checks out: the remote is told
// where the store's history ends, so it sends what lies behind.
func TestRevertBehindShallowBoundary(t *testing.T) {
	f := newFixture(t)
	f.commit(t, "old", map[string]string{"modules/values.yaml": "global: {v: old-and-unique}\n"})
	f.commit(t, "new", map[string]string{"modules/values.yaml": "global: {v: new}\n"})
	s := f.syncer(t, f.http.URL("addons"), "main", Auth{Username: "alice", PasswordFile: f.passFile})
	_, _, err := s.Sync(t.Context())
	must(t, err)
	if !s.shallow() {
		t.Fatal("the first fetch was meant to be shallow")
	}
	f.commit(t, "revert", map[string]string{"modules/values.yaml": "global: {v: old-and-unique}\n"})
	rev, _, err := s.Sync(t.Context())
	must(t, err)
	b, err := os.ReadFile(filepath.Join(rev.Dir, "modules/values.yaml"))
	must(t, err)
	if string(b) != "global: {v: old-and-unique}\n" {
		t.Fatalf("values.yaml = %q", b)
	}
}
