package gitserver

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHServer serves the bare repositories under Root over SSH on a loopback
// port: it accepts the client keys it was given and runs git-upload-pack or
// git-receive-pack for the "exec" request, as a git host does.
type SSHServer struct {
	Root string
	// User is the login name clients use ("git").
	User string
	// HostKey is the server's public key (for known_hosts).
	HostKey ssh.PublicKey

	config *ssh.ServerConfig
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
}

// StartSSH starts an SSH git server that authorizes the given public keys.
func StartSSH(root string, authorized ...ssh.PublicKey) (*SSHServer, error) {
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		return nil, err
	}
	s := &SSHServer{Root: root, User: "git", HostKey: signer.PublicKey(), addr: "127.0.0.1:0", conns: map[net.Conn]struct{}{}}
	s.config = &ssh.ServerConfig{
		PublicKeyCallback: func(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			for _, a := range authorized {
				if string(a.Marshal()) == string(key.Marshal()) {
					return nil, nil
				}
			}
			return nil, fmt.Errorf("key not authorized for %q", meta.User())
		},
	}
	s.config.AddHostKey(signer)
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// Start listens again (on the same port after a Stop).
func (s *SSHServer) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return errors.New("already running")
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return err
	}
	s.addr = ln.Addr().String()
	s.ln = ln
	go s.accept(ln)
	return nil
}

func (s *SSHServer) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		go s.serveConn(c)
	}
}

// Stop closes the listener and every open connection.
func (s *SSHServer) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		_ = s.ln.Close()
		s.ln = nil
	}
	for c := range s.conns {
		_ = c.Close()
	}
	clear(s.conns)
}

func (s *SSHServer) serveConn(c net.Conn) {
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	_, chans, reqs, err := ssh.NewServerConn(c, s.config)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			return
		}
		go s.serveSession(ch, creqs)
	}
}

func (s *SSHServer) serveSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	for req := range reqs {
		switch req.Type {
		case "env":
			_ = req.Reply(true, nil)
		case "exec":
			var payload struct{ Command string }
			if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
				_ = req.Reply(false, nil)
				return
			}
			_ = req.Reply(true, nil)
			code := s.run(ch, payload.Command)
			status := make([]byte, 4)
			binary.BigEndian.PutUint32(status, uint32(code))
			_, _ = ch.SendRequest("exit-status", false, status)
			return
		default:
			_ = req.Reply(false, nil)
		}
	}
}

// run executes "git-upload-pack 'path'" (or receive-pack) inside Root.
func (s *SSHServer) run(ch ssh.Channel, command string) int {
	verb, arg, ok := strings.Cut(command, " ")
	if !ok || (verb != "git-upload-pack" && verb != "git-receive-pack") {
		fmt.Fprintf(ch.Stderr(), "unsupported command %q\n", command)
		return 128
	}
	rel := strings.Trim(strings.TrimSpace(arg), `'"`)
	rel = strings.TrimPrefix(filepath.Clean("/"+rel), "/")
	path := filepath.Join(s.Root, rel)
	if _, err := os.Stat(path); err != nil {
		fmt.Fprintf(ch.Stderr(), "repository %q not found\n", rel)
		return 128
	}
	cmd := exec.Command("git", strings.TrimPrefix(verb, "git-"), path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 128
	}
	cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(ch.Stderr(), err)
		return 128
	}
	// Not waited for: the client may keep its side open after git exits.
	go func() {
		_, _ = io.Copy(stdin, ch)
		_ = stdin.Close()
	}()
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		return 128
	}
	return 0
}

// Addr is host:port.
func (s *SSHServer) Addr() string { return s.addr }

// URL is the ssh:// clone URL of the named repository (name without ".git").
func (s *SSHServer) URL(name string) string {
	return "ssh://" + s.User + "@" + s.addr + "/" + name + ".git"
}

// WriteKnownHosts writes a known_hosts file that trusts this server.
func (s *SSHServer) WriteKnownHosts(path string) error {
	line := knownhosts.Line([]string{knownhosts.Normalize(s.addr)}, s.HostKey)
	return os.WriteFile(path, []byte(line+"\n"), 0o600)
}

// NewClientKey generates an ed25519 client key, writes it to path in
// OpenSSH format (0600) and returns its public half.
func NewClientKey(path string) (ssh.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, err
	}
	return ssh.NewPublicKey(pub)
}
