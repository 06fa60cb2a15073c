package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"
)

// Server is one HTTPS listener for webhook requests.
type Server struct {
	// Addr is host:port to listen on.
	Addr string
	// CertFile and KeyFile are the serving certificate and key (PEM); they
	// are read again when they change on disk, as a pod gets them from a
	// Secret that is rotated.
	CertFile, KeyFile string
	// ClientCAFiles, if any, make the server require a client certificate
	// signed by one of them (the API server's, configured with an
	// AdmissionConfiguration kubeconfig); they are read again when they
	// change on disk, as the certificate is.
	ClientCAFiles []string
	Handler       http.Handler
	Logger        *slog.Logger
	// MaxConnections bounds the open connections (default
	// DefaultMaxConnections).
	MaxConnections int
	// Now is the clock of the certificate files' checks (default time.Now).
	Now func() time.Time
}

// certReloadEvery bounds how often the certificate files are looked at:
// at most once a second, on a handshake.
const certReloadEvery = time.Second

// Listener is a webhook server ready to serve: its certificate and client
// CAs loaded, its address bound.
type Listener struct {
	ln     net.Listener
	srv    *http.Server
	logger *slog.Logger
}

// Listen loads the certificate and the client CAs, whose first reads must
// succeed (a server without them would only fail every handshake), and
// binds Addr: once it returns, the server answers, so a caller may
// register the webhooks then.
func (s *Server) Listen(ctx context.Context) (*Listener, error) {
	logger := s.Logger
	if logger == nil {
		logger = slog.Default()
	}
	now := s.Now
	if now == nil {
		now = time.Now
	}
	certs := certFiles(s.CertFile, s.KeyFile, now, logger)
	if _, err := certs(nil); err != nil {
		return nil, fmt.Errorf("webhook server certificate: %w", err)
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs}
	if len(s.ClientCAFiles) > 0 {
		cas := clientCAs(s.ClientCAFiles, tlsCfg.Clone(), now, logger)
		if _, err := cas(nil); err != nil {
			return nil, err
		}
		// GetConfigForClient gives each handshake the current pool; this
		// config is never used for one, and would trust nothing if it were
		tlsCfg.ClientCAs, tlsCfg.ClientAuth = x509.NewCertPool(), tls.RequireAndVerifyClientCert
		tlsCfg.GetConfigForClient = cas
	}
	var lc net.ListenConfig
	tcp, err := lc.Listen(ctx, "tcp", s.Addr)
	if err != nil {
		return nil, fmt.Errorf("webhook server: %w", err)
	}
	maxConns := s.MaxConnections
	if maxConns <= 0 {
		maxConns = DefaultMaxConnections
	}
	ln := newLimitListener(tcp, maxConns)
	srv := &http.Server{
		Handler:           s.Handler,
		TLSConfig:         tlsCfg,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes,
		// a request may wait for a hook for its timeout (30 s at most)
		ReadTimeout:  30 * time.Second,
		WriteTimeout: 45 * time.Second,
		IdleTimeout:  90 * time.Second,
		ErrorLog:     slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
		BaseContext:  func(net.Listener) context.Context { return ctx },
	}
	// HTTP/1.1 only: over HTTP/2 one connection carries up to 250
	// requests, each with a body the server buffers before the handler
	// reads it, past the connection bound and the in-flight budget
	// (docs/security.md, "The webhook port"). The API server's webhook
	// client, offered no h2, speaks HTTP/1.1.
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	srv.Protocols = &protocols
	return &Listener{ln: ln, srv: srv, logger: logger}, nil
}

// Addr is the bound address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Serve serves TLS until ctx ends; it closes the listener.
func (l *Listener) Serve(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = l.srv.Shutdown(sctx)
	}()
	l.logger.Info("webhook server listening", "address", l.ln.Addr().String())
	err := l.srv.ServeTLS(l.ln, "", "")
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func fileStamp(paths ...string) (string, error) {
	var s string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		s += fmt.Sprintf("%d.%d;", info.Size(), info.ModTime().UnixNano())
	}
	return s, nil
}
