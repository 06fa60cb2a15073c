package gitsync

import (
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/addonops/addon-operator/internal/gitserver"
)

// fixture is a repository served over HTTP (with basic auth) and SSH, with
// the commits, tags and refs the sync tests follow.
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

func (f *fixture) syncer(t *testing.T, url, ref string, auth Auth) *Syncer[any] {
	t.Helper()
	s, err := New(Options[any]{URL: url, Ref: ref, CheckoutDir: filepath.Join(t.TempDir(), "checkout"), Auth: auth,
		Require: []string{"modules"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	return s
}

// listing describes a checkout: every path with its type, mode and
// content (or link target).
func listing(t *testing.T, root string) map[string]string {
	return describeTree(t, root, func(info fs.FileInfo, b []byte) string {
		return fmt.Sprintf("%v %q", info.Mode().Perm(), b)
	})
}

// fetcherOf and storeOf reach the syncer's parts.
func fetcherOf(s *Syncer[any]) *fetcher   { return s.remote.(*fetcher) }
func storeOf(s *Syncer[any]) *objectStore { return s.commits.(*objectStore) }
