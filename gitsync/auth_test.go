package gitsync

import (
	"bytes"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/cache"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/addonops/addon-operator/internal/gitserver"
)

// withUserinfo puts user info into an http URL of the test server.
func withUserinfo(rawURL, userinfo string) string {
	scheme, rest, _ := strings.Cut(rawURL, "://")
	return scheme + "://" + userinfo + "@" + rest
}

// noSecretOnDisk fails when a file under dir holds secret: hooks can read
// the checkout directory.
func noSecretOnDisk(t *testing.T, dir, secret string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the secret:\n%s", p, b)
		}
		return nil
	})
	must(t, err)
}

// Credentials in GIT_URL authenticate every fetch (a named ref in the
// listing's session, a commit SHA through the store's remote) and are
// written nowhere under the checkout directory.
func TestURLCredentialsStayOffDisk(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name, url, ref, want string
	}{
		{name: "branch", url: withUserinfo(f.http.URL("addons"), "alice:s3cret"), ref: "main", want: f.c2},
		{name: "commit SHA", url: withUserinfo(f.http.URL("addons"), "alice:s3cret"), ref: f.c1, want: f.c1},
		{name: "upper-case scheme, commit SHA", url: "HTTP" + strings.TrimPrefix(withUserinfo(f.http.URL("addons"), "alice:s3cret"), "http"), ref: f.c3, want: f.c3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := f.syncer(t, tt.url, tt.ref, Auth{})
			rev, _, err := s.Sync(t.Context())
			must(t, err)
			if rev.Commit != tt.want {
				t.Fatalf("revision %s, want %s", rev.Commit, tt.want)
			}
			cfg, err := os.ReadFile(filepath.Join(s.opts.CheckoutDir, "repo.git", "config"))
			must(t, err)
			if !strings.Contains(string(cfg), "/addons.git") {
				t.Fatalf("the store's config names no remote:\n%s", cfg)
			}
			noSecretOnDisk(t, s.opts.CheckoutDir, "s3cret")
			if st := s.Status(); strings.Contains(st.URL, "s3cret") || strings.Contains(st.URL, "alice") {
				t.Fatalf("status URL %q", st.URL)
			}
		})
	}
	t.Run("wrong password in the URL", func(t *testing.T) {
		s := f.syncer(t, withUserinfo(f.http.URL("addons"), "alice:n0pe"), f.c1, Auth{})
		_, _, err := s.Sync(t.Context())
		if err == nil || strings.Contains(err.Error(), "n0pe") {
			t.Fatalf("err = %v", err)
		}
		noSecretOnDisk(t, s.opts.CheckoutDir, "n0pe")
	})
}

// A store written by an earlier version, with the credentials in its
// remote, loses them when it is opened.
func TestStoreConfigLosesOldCredentials(t *testing.T) {
	checkout := filepath.Join(t.TempDir(), "checkout")
	st := filesystem.NewStorage(osfs.New(filepath.Join(checkout, "repo.git")), cache.NewObjectLRUDefault())
	repo, err := git.Init(st, nil)
	must(t, err)
	_, err = repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{"https://alice:s3cret@host/x.git"}})
	must(t, err)
	_, err = New(Options[any]{URL: "https://alice:s3cret@host/x.git", CheckoutDir: checkout,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	noSecretOnDisk(t, checkout, "s3cret")
}

// The URL's user info is the http auth unless credential files are set.
func TestAuthFromURL(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "pw")
	must(t, os.WriteFile(pw, []byte("from-file\n"), 0o600))
	tests := []struct {
		name, url string
		auth      Auth
		want      *githttp.BasicAuth
	}{
		{name: "user and password", url: "https://alice:s3cret@host/x.git", want: &githttp.BasicAuth{Username: "alice", Password: "s3cret"}},
		{name: "upper-case scheme", url: "HTTPS://alice:s3cret@host/x.git", want: &githttp.BasicAuth{Username: "alice", Password: "s3cret"}},
		{name: "token alone", url: "https://T0KEN@host/x.git", want: &githttp.BasicAuth{Username: "T0KEN"}},
		{name: "escaped", url: "https://alice:p%40ss@host/x.git", want: &githttp.BasicAuth{Username: "alice", Password: "p@ss"}},
		{name: "files win", url: "https://alice:s3cret@host/x.git", auth: Auth{Username: "bob", PasswordFile: pw}, want: &githttp.BasicAuth{Username: "bob", Password: "from-file"}},
		{name: "none", url: "https://host/x.git"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := tt.auth.method(tt.url)
			must(t, err)
			if tt.want == nil {
				if m != nil {
					t.Fatalf("auth = %v, want none", m)
				}
				return
			}
			got, ok := m.(*githttp.BasicAuth)
			if !ok || *got != *tt.want {
				t.Fatalf("auth = %#v, want %#v", m, tt.want)
			}
		})
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
