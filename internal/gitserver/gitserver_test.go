package gitserver

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func fixture(t *testing.T, root string) (*Repo, string) {
	t.Helper()
	r, err := NewRepo(root, "modules", filepath.Join(t.TempDir(), "work"))
	if err != nil {
		t.Fatal(err)
	}
	steps := []func() error{
		func() error { return r.WriteFile("modules/values.yaml", "global: {}\n", 0) },
		func() error { _, err := r.Commit("first"); return err },
		func() error { return r.AnnotatedTag("v1.0.0", "release 1") },
		func() error { return r.WriteFile("modules/001-one/hooks/h.sh", "#!/bin/sh\n", 0o755) },
		func() error { _, err := r.Commit("second"); return err },
		func() error { return r.Tag("light") },
		func() error { return r.Branch("feature") },
		func() error { _, err := r.Commit("on feature"); return err },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			t.Fatal(err)
		}
	}
	head, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.PullRef(42, head); err != nil {
		t.Fatal(err)
	}
	if err := r.Push(); err != nil {
		t.Fatal(err)
	}
	return r, head
}

func clone(t *testing.T, url string, auth transport.AuthMethod, ref plumbing.ReferenceName) *git.Repository {
	t.Helper()
	repo, err := git.PlainCloneContext(t.Context(), filepath.Join(t.TempDir(), "clone"), false, &git.CloneOptions{
		URL: url, Auth: auth, ReferenceName: ref, SingleBranch: true,
	})
	if err != nil {
		t.Fatalf("clone %s: %v", url, err)
	}
	return repo
}

func TestCloneOverEveryTransport(t *testing.T) {
	root := t.TempDir()
	repo, featureHead := fixture(t, root)

	httpSrv, err := StartHTTP(root, WithBasicAuth("alice", "s3cret"), WithToken("tok3n"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(httpSrv.Stop)

	keyFile := filepath.Join(t.TempDir(), "id_ed25519")
	pub, err := NewClientKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	sshSrv, err := StartSSH(root, pub)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sshSrv.Stop)
	knownHosts := filepath.Join(t.TempDir(), "known_hosts")
	if err := sshSrv.WriteKnownHosts(knownHosts); err != nil {
		t.Fatal(err)
	}
	sshAuth, err := gitssh.NewPublicKeysFromFile("git", keyFile, "")
	if err != nil {
		t.Fatal(err)
	}
	hostKeys, err := knownhosts.New(knownHosts)
	if err != nil {
		t.Fatal(err)
	}
	sshAuth.HostKeyCallback = hostKeys

	tests := []struct {
		name string
		url  string
		auth transport.AuthMethod
		ref  plumbing.ReferenceName
		want string
	}{
		{name: "http basic auth", url: httpSrv.URL("modules"), auth: &githttp.BasicAuth{Username: "alice", Password: "s3cret"}, ref: "refs/heads/feature", want: featureHead},
		{name: "http token", url: httpSrv.URL("modules"), auth: &githttp.TokenAuth{Token: "tok3n"}, ref: "refs/heads/feature", want: featureHead},
		{name: "ssh", url: sshSrv.URL("modules"), auth: sshAuth, ref: "refs/heads/feature", want: featureHead},
		{name: "file url", url: "file://" + repo.Bare, ref: "refs/heads/feature", want: featureHead},
		{name: "annotated tag", url: "file://" + repo.Bare, ref: "refs/tags/v1.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := clone(t, tt.url, tt.auth, tt.ref)
			head, err := r.Head()
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != "" && head.Hash().String() != tt.want {
				t.Fatalf("HEAD = %s, want %s", head.Hash(), tt.want)
			}
		})
	}

	t.Run("pull request ref by refspec", func(t *testing.T) {
		r, err := git.PlainInit(t.TempDir(), true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{httpSrv.URL("modules")}}); err != nil {
			t.Fatal(err)
		}
		err = r.FetchContext(t.Context(), &git.FetchOptions{
			RefSpecs: []config.RefSpec{"+refs/pull/42/head:refs/remotes/origin/pr-42"},
			Auth:     &githttp.BasicAuth{Username: "alice", Password: "s3cret"},
		})
		if err != nil {
			t.Fatal(err)
		}
		ref, err := r.Reference("refs/remotes/origin/pr-42", true)
		if err != nil || ref.Hash().String() != featureHead {
			t.Fatalf("pr ref = %v, %v", ref, err)
		}
	})
	t.Run("wrong password is refused", func(t *testing.T) {
		_, err := git.PlainCloneContext(t.Context(), t.TempDir(), false, &git.CloneOptions{
			URL: httpSrv.URL("modules"), Auth: &githttp.BasicAuth{Username: "alice", Password: "wrong"},
		})
		if err == nil {
			t.Fatal("clone with a wrong password succeeded")
		}
	})
	t.Run("unknown ssh key is refused", func(t *testing.T) {
		otherKey := filepath.Join(t.TempDir(), "other")
		if _, err := NewClientKey(otherKey); err != nil {
			t.Fatal(err)
		}
		auth, _ := gitssh.NewPublicKeysFromFile("git", otherKey, "")
		auth.HostKeyCallback = hostKeys
		_, err := git.PlainCloneContext(t.Context(), t.TempDir(), false, &git.CloneOptions{URL: sshSrv.URL("modules"), Auth: auth})
		if err == nil {
			t.Fatal("clone with an unknown key succeeded")
		}
	})
	t.Run("server down and up again", func(t *testing.T) {
		httpSrv.Stop()
		_, err := git.PlainCloneContext(t.Context(), t.TempDir(), false, &git.CloneOptions{
			URL: httpSrv.URL("modules"), Auth: &githttp.BasicAuth{Username: "alice", Password: "s3cret"},
		})
		if err == nil {
			t.Fatal("clone from a stopped server succeeded")
		}
		if err := httpSrv.Start(); err != nil {
			t.Fatal(err)
		}
		clone(t, httpSrv.URL("modules"), &githttp.BasicAuth{Username: "alice", Password: "s3cret"}, "refs/heads/main")
	})
	if httpSrv.UploadPackRequests() == 0 {
		t.Fatal("upload-pack requests not counted")
	}
}

func TestPushOverHTTP(t *testing.T) {
	root := t.TempDir()
	r, _ := fixture(t, root)
	srv, err := StartHTTP(root, WithBasicAuth("alice", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	dir := filepath.Join(t.TempDir(), "c")
	repo, err := git.PlainClone(dir, false, &git.CloneOptions{URL: srv.URL("modules"), Auth: &githttp.BasicAuth{Username: "alice", Password: "pw"}})
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	if err := os.WriteFile(filepath.Join(dir, "new.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Add("new.txt"); err != nil {
		t.Fatal(err)
	}
	// an explicit author: a machine without a git identity (CI with an
	// empty HOME) has none to default to
	sha, err := wt.Commit("pushed", &git.CommitOptions{Author: &object.Signature{Name: "test", Email: "test@example.com", When: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{Auth: &githttp.BasicAuth{Username: "alice", Password: "pw"}}); err != nil {
		t.Fatal(err)
	}
	got, err := runGit(r.Bare, "rev-parse", "refs/heads/main")
	if err != nil || got != sha.String() {
		t.Fatalf("bare main = %q, %v; want %s", got, err, sha)
	}
}
