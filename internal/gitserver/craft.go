package gitserver

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// TreeEntry is one entry of a crafted tree (CommitTree): a file (Mode
// "100644" or "100755", Content), a symlink (Mode "120000", Content is its
// target) or a directory (Mode "40000", Entries).
type TreeEntry struct {
	Name, Mode, Content string
	Entries             []TreeEntry
}

// CommitTree writes the tree exactly as given, names unchecked, so a test
// can serve what git's own commands refuse to create (a name holding "/",
// "..", ".git", or twice the same name). It commits the tree on top of
// main in the bare repository, moves main there and returns the commit.
// The work tree does not follow: a later CommitFiles force-pushes over it.
func (r *Repo) CommitTree(msg string, entries []TreeEntry) (string, error) {
	tree, err := r.writeTree(entries)
	if err != nil {
		return "", err
	}
	parent, err := runGit(r.Bare, "rev-parse", "refs/heads/main")
	if err != nil {
		return "", err
	}
	r.clock = r.clock.Add(1e9)
	date := strconv.FormatInt(r.clock.Unix(), 10) + " +0000"
	sha, err := runGitEnv(r.Bare, nil, []string{"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date},
		"commit-tree", tree, "-p", parent, "-m", msg)
	if err != nil {
		return "", err
	}
	_, err = runGit(r.Bare, "update-ref", "refs/heads/main", sha)
	return sha, err
}

// writeTree writes the blobs and the tree object (with --literally, so
// git's checks of names do not apply) and returns the tree's hash.
func (r *Repo) writeTree(entries []TreeEntry) (string, error) {
	sorted := slices.Clone(entries)
	slices.SortStableFunc(sorted, func(a, b TreeEntry) int { return strings.Compare(a.Name, b.Name) })
	var raw bytes.Buffer
	for _, e := range sorted {
		var sha string
		var err error
		if e.Mode == "40000" {
			sha, err = r.writeTree(e.Entries)
		} else {
			sha, err = runGitEnv(r.Bare, []byte(e.Content), nil, "hash-object", "-w", "--stdin")
		}
		if err != nil {
			return "", err
		}
		bin, err := hex.DecodeString(sha)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&raw, "%s %s\x00", e.Mode, e.Name)
		raw.Write(bin)
	}
	return runGitEnv(r.Bare, raw.Bytes(), nil, "hash-object", "-w", "-t", "tree", "--literally", "--stdin")
}

// runGitEnv runs git in dir with stdin and extra environment, and returns
// its trimmed stdout.
func runGitEnv(dir string, stdin []byte, env []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(),
		"GIT_AUTHOR_NAME=Fixture Author", "GIT_AUTHOR_EMAIL=author@example.com",
		"GIT_COMMITTER_NAME=Fixture Author", "GIT_COMMITTER_EMAIL=author@example.com",
		"GIT_CONFIG_NOSYSTEM=1", "HOME="+os.TempDir(),
	), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}
