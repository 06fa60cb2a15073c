package gitserver

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Repo is a fixture repository: a work tree where tests write files and make
// commits, branches and tags, and a bare repository under the server root
// that Push mirrors everything to.
type Repo struct {
	// Dir is the work tree.
	Dir string
	// Bare is the served bare repository (<root>/<name>.git).
	Bare string

	clock time.Time
	// signing: GNUPGHOME and key for signed commits (SignWith)
	gnupgHome, signingKey string
}

// SignWith makes later commits signed with the key in gnupgHome; an empty
// key goes back to unsigned commits.
func (r *Repo) SignWith(gnupgHome, key string) { r.gnupgHome, r.signingKey = gnupgHome, key }

// NewRepo creates an empty work tree in workDir and a bare repository
// <root>/<name>.git, with "main" as the initial branch.
func NewRepo(root, name, workDir string) (*Repo, error) {
	r := &Repo{Dir: workDir, Bare: filepath.Join(root, name+".git"), clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, err
	}
	if _, err := runGit("", "init", "--quiet", "--bare", "--initial-branch=main", r.Bare); err != nil {
		return nil, err
	}
	if _, err := r.Git("init", "--quiet", "--initial-branch=main"); err != nil {
		return nil, err
	}
	if _, err := r.Git("remote", "add", "origin", r.Bare); err != nil {
		return nil, err
	}
	return r, nil
}

// Git runs git in the work tree with a fixed identity and returns its trimmed stdout.
func (r *Repo) Git(args ...string) (string, error) { return runGit(r.Dir, args...) }

func runGit(dir string, args ...string) (string, error) { return runGitEnv(dir, nil, nil, args...) }

// WriteFile writes a file (creating directories); mode 0 means 0644.
func (r *Repo) WriteFile(path, content string, mode os.FileMode) error {
	if mode == 0 {
		mode = 0o644
	}
	full := filepath.Join(r.Dir, path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(full, []byte(content), mode); err != nil {
		return err
	}
	return os.Chmod(full, mode)
}

// Remove deletes a file or directory from the work tree.
func (r *Repo) Remove(path string) error { return os.RemoveAll(filepath.Join(r.Dir, path)) }

// Commit stages everything and commits; it returns the new commit's SHA.
// Commit times advance by a second per commit, so SHAs are reproducible.
func (r *Repo) Commit(msg string) (string, error) {
	if _, err := r.Git("add", "-A"); err != nil {
		return "", err
	}
	r.clock = r.clock.Add(time.Second)
	date := strconv.FormatInt(r.clock.Unix(), 10) + " +0000"
	args := []string{"commit", "--quiet", "--allow-empty", "-m", msg}
	if r.signingKey != "" {
		args = append(args, "--gpg-sign="+r.signingKey)
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = r.Dir
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=Fixture Author", "GIT_AUTHOR_EMAIL=author@example.com",
		"GIT_COMMITTER_NAME=Fixture Author", "GIT_COMMITTER_EMAIL=author@example.com",
		"GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date,
		"GIT_CONFIG_NOSYSTEM=1", "HOME="+os.TempDir(),
	)
	if r.gnupgHome != "" {
		cmd.Env = append(cmd.Env, "GNUPGHOME="+r.gnupgHome)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("git commit: %w: %s", err, out)
	}
	return r.Head()
}

// CommitFiles writes files (path → content; mode 0644, or 0755 for a
// script starting with #!), removes paths, commits everything and pushes;
// it returns the new commit.
func (r *Repo) CommitFiles(msg string, files map[string]string, remove ...string) (string, error) {
	for p, c := range files {
		mode := os.FileMode(0)
		if strings.HasPrefix(c, "#!") {
			mode = 0o755 // a script: a hook
		}
		if err := r.WriteFile(p, c, mode); err != nil {
			return "", err
		}
	}
	for _, p := range remove {
		if err := r.Remove(p); err != nil {
			return "", err
		}
	}
	sha, err := r.Commit(msg)
	if err != nil {
		return "", err
	}
	return sha, r.Push()
}

// Head is the SHA of the work tree's HEAD.
func (r *Repo) Head() (string, error) { return r.Git("rev-parse", "HEAD") }

// Branch creates (or moves) a branch to HEAD and checks it out.
func (r *Repo) Branch(name string) error {
	_, err := r.Git("checkout", "--quiet", "-B", name)
	return err
}

// Checkout switches the work tree to a branch, tag or commit.
func (r *Repo) Checkout(ref string) error {
	_, err := r.Git("checkout", "--quiet", ref)
	return err
}

// Tag creates a lightweight tag at HEAD.
func (r *Repo) Tag(name string) error {
	_, err := r.Git("tag", "--force", name)
	return err
}

// AnnotatedTag creates an annotated tag at HEAD.
func (r *Repo) AnnotatedTag(name, msg string) error {
	_, err := r.Git("tag", "--force", "--annotate", "-m", msg, name)
	return err
}

// PullRef points refs/pull/<n>/head at a commit, as a forge does for a pull request.
func (r *Repo) PullRef(n int, sha string) error {
	_, err := r.Git("update-ref", fmt.Sprintf("refs/pull/%d/head", n), sha)
	return err
}

// NewSigningKey creates an OpenPGP key in a new GNUPGHOME under dir and
// writes its armored public key to pubFile; it returns the GNUPGHOME and
// the key's fingerprint.
func NewSigningKey(dir, email, pubFile string) (gnupgHome, fingerprint string, err error) {
	gnupgHome = filepath.Join(dir, "gnupg")
	if err := os.MkdirAll(gnupgHome, 0o700); err != nil {
		return "", "", err
	}
	gpg := func(args ...string) (string, error) {
		cmd := exec.Command("gpg", append([]string{"--batch", "--homedir", gnupgHome}, args...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("gpg %s: %w: %s", strings.Join(args, " "), err, errb.String())
		}
		return out.String(), nil
	}
	if _, err := gpg("--passphrase", "", "--quick-gen-key", "Fixture Signer <"+email+">", "ed25519", "sign", "never"); err != nil {
		return "", "", err
	}
	out, err := gpg("--with-colons", "--list-secret-keys", email)
	if err != nil {
		return "", "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Split(line, ":"); len(f) > 9 && f[0] == "fpr" {
			fingerprint = f[9]
			break
		}
	}
	pub, err := gpg("--armor", "--export", fingerprint)
	if err != nil {
		return "", "", err
	}
	return gnupgHome, fingerprint, os.WriteFile(pubFile, []byte(pub), 0o644)
}

// Push mirrors every ref of the work repository into the bare repository
// (forced, so rewritten history is published as a force-push would).
func (r *Repo) Push() error {
	_, err := r.Git("push", "--quiet", "--force", "--mirror", "origin")
	return err
}
