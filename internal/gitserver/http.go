package gitserver

import (
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"net/http/cgi"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
)

// HTTPServer serves the bare repositories under Root with `git http-backend`
// (the smart HTTP protocol) on a loopback port.
type HTTPServer struct {
	// Root holds the served repositories (<Root>/<name>.git).
	Root string
	// Username and Password, when set, are required as basic auth.
	Username, Password string
	// Token, when set, is accepted as a bearer token (or as the basic-auth password).
	Token string
	// Filter serves partial fetches: upload-pack advertises "filter" and
	// accepts wants of any object (a blob by its hash), as GitHub and
	// GitLab do. Off, it serves whole commits only, as git does by default.
	Filter bool
	// RefuseBlobWants, with Filter, advertises partial fetches but
	// answers a request that wants a blob by its hash with git's "not our
	// ref" error, as a server whose configuration disagrees with its
	// advertisement does.
	RefuseBlobWants bool

	addr     string
	mu       sync.Mutex
	srv      *http.Server
	uploads  atomic.Int64
	requests atomic.Int64
	sent     atomic.Int64
	// omit: per repository, objects left out of the packs sent (Omit)
	omit map[string]map[string]bool
}

// StartHTTP starts serving root on 127.0.0.1 at a free port.
func StartHTTP(root string, opts ...HTTPOption) (*HTTPServer, error) {
	s := &HTTPServer{Root: root, addr: "127.0.0.1:0"}
	for _, o := range opts {
		o(s)
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// HTTPOption configures StartHTTP.
type HTTPOption func(*HTTPServer)

// WithBasicAuth requires the given credentials.
func WithBasicAuth(user, password string) HTTPOption {
	return func(s *HTTPServer) { s.Username, s.Password = user, password }
}

// WithToken requires a bearer token (also accepted as a basic-auth password).
func WithToken(token string) HTTPOption { return func(s *HTTPServer) { s.Token = token } }

// WithFilter serves partial fetches (HTTPServer.Filter).
func WithFilter() HTTPOption { return func(s *HTTPServer) { s.Filter = true } }

// WithFilterRefusingBlobs advertises partial fetches but refuses blob
// wants (HTTPServer.RefuseBlobWants).
func WithFilterRefusingBlobs() HTTPOption {
	return func(s *HTTPServer) { s.Filter, s.RefuseBlobWants = true, true }
}

// Start listens again (on the same port after a Stop).
func (s *HTTPServer) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return errors.New("already running")
	}
	l, err := net.Listen("tcp", s.addr)
	if err != nil {
		return err
	}
	s.addr = l.Addr().String()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		l.Close()
		return err
	}
	backend := &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		Env:  []string{"GIT_PROJECT_ROOT=" + s.Root, "GIT_HTTP_EXPORT_ALL=1"},
	}
	if s.Filter {
		// configuration through the environment, for every repository served
		backend.Env = append(backend.Env, "GIT_CONFIG_COUNT=2",
			"GIT_CONFIG_KEY_0=uploadpack.allowFilter", "GIT_CONFIG_VALUE_0=true",
			"GIT_CONFIG_KEY_1=uploadpack.allowAnySHA1InWant", "GIT_CONFIG_VALUE_1=true")
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		w := &counting{ResponseWriter: rw, n: &s.sent}
		user, ok := s.authorize(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			s.uploads.Add(1)
		}
		if s.RefuseBlobWants && refuseBlobWant(w, r, s.Root) {
			return
		}
		if omit, bare := s.omitted(r); omit != nil {
			serveUploadPack(w, r, bare, omit)
			return
		}
		h := *backend
		// http-backend allows pushes only for an authenticated REMOTE_USER.
		h.Env = append(append([]string{}, backend.Env...), "REMOTE_USER="+user)
		h.ServeHTTP(w, r)
	})}
	go func(srv *http.Server) { _ = srv.Serve(l) }(s.srv)
	return nil
}

func (s *HTTPServer) authorize(r *http.Request) (string, bool) {
	if s.Username == "" && s.Token == "" {
		return "anonymous", true
	}
	eq := func(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
	if s.Token != "" {
		if auth := r.Header.Get("Authorization"); strings.HasPrefix(auth, "Bearer ") && eq(strings.TrimPrefix(auth, "Bearer "), s.Token) {
			return "token", true
		}
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		return "", false
	}
	if s.Username != "" && eq(user, s.Username) && eq(pass, s.Password) {
		return user, true
	}
	if s.Token != "" && eq(pass, s.Token) {
		return user, true
	}
	return "", false
}

// Stop closes the listener and all connections; Start brings it back.
func (s *HTTPServer) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		_ = s.srv.Close()
		s.srv = nil
	}
}

// URL is the clone URL of the named repository (name without ".git").
func (s *HTTPServer) URL(name string) string { return "http://" + s.addr + "/" + name + ".git" }

// Addr is host:port.
func (s *HTTPServer) Addr() string { return s.addr }

// UploadPackRequests counts git-upload-pack POSTs, the requests that
// transfer objects; a ref listing alone does not count.
func (s *HTTPServer) UploadPackRequests() int64 { return s.uploads.Load() }

// Requests counts every request.
func (s *HTTPServer) Requests() int64 { return s.requests.Load() }

// BytesSent counts the bytes of every response body: what clients
// received, ref listings and packs alike.
func (s *HTTPServer) BytesSent() int64 { return s.sent.Load() }

// counting adds what a response writes to n.
type counting struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c *counting) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n.Add(int64(n))
	return n, err
}
