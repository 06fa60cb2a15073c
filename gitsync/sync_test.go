package gitsync

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
	s.revisions.wait()
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
	if !shallow(storeOf(s)) {
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
