package gitsync

import (
	"fmt"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Auth names the credential files (docs/git.md: GIT_USERNAME,
// GIT_PASSWORD_FILE, GIT_TOKEN_FILE, GIT_SSH_KEY_FILE, GIT_KNOWN_HOSTS_FILE).
// Secrets are read from files only, when a connection needs them.
type Auth struct {
	Username       string
	PasswordFile   string
	TokenFile      string
	SSHKeyFile     string
	KnownHostsFile string
}

func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read credential file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// method picks the auth for the URL's transport. For http(s), the
// credential files win over user info in the URL.
func (a Auth) method(rawURL string) (transport.AuthMethod, error) {
	ep, err := transport.NewEndpoint(rawURL)
	if err != nil {
		return nil, fmt.Errorf("git URL: %w", err)
	}
	switch ep.Protocol {
	case "http", "https":
		switch {
		case a.TokenFile != "":
			tok, err := readSecret(a.TokenFile)
			if err != nil {
				return nil, err
			}
			user := a.Username
			if user == "" {
				user = "git" // forges accept any user name with a token as the password
			}
			return &githttp.BasicAuth{Username: user, Password: tok}, nil
		case a.PasswordFile != "":
			pw, err := readSecret(a.PasswordFile)
			if err != nil {
				return nil, err
			}
			return &githttp.BasicAuth{Username: a.Username, Password: pw}, nil
		}
		return urlAuth(ep), nil
	case "ssh":
		user := ep.User
		if user == "" {
			user = a.Username
		}
		if user == "" {
			user = "git"
		}
		var auth *gitssh.PublicKeys
		if a.SSHKeyFile == "" {
			return nil, fmt.Errorf("an ssh URL needs GIT_SSH_KEY_FILE")
		}
		auth, err = gitssh.NewPublicKeysFromFile(user, a.SSHKeyFile, "")
		if err != nil {
			return nil, fmt.Errorf("ssh key: %w", err)
		}
		if a.KnownHostsFile != "" {
			cb, err := knownhosts.New(a.KnownHostsFile)
			if err != nil {
				return nil, fmt.Errorf("known hosts: %w", err)
			}
			auth.HostKeyCallback = cb
		} else {
			// go-git's default checks ~/.ssh/known_hosts: host keys are always checked
			cb, err := gitssh.NewKnownHostsCallback()
			if err != nil {
				return nil, fmt.Errorf("no GIT_KNOWN_HOSTS_FILE and no usable ~/.ssh/known_hosts: %w", err)
			}
			auth.HostKeyCallback = cb
		}
		return auth, nil
	}
	return nil, nil
}

// urlAuth is the basic auth written in an http URL (a token alone is the
// user name), or nil. It is passed explicitly because the object store's
// remote, which a fetch by commit SHA goes through, holds the URL without
// it (openStore).
func urlAuth(ep *transport.Endpoint) transport.AuthMethod {
	if ep.User == "" {
		return nil
	}
	return &githttp.BasicAuth{Username: ep.User, Password: ep.Password}
}
