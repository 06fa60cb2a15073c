package webhook

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/kubernetes"
)

// ServerConfig is one configured webhook server: how it listens (Handler
// is set by Servers.Run) and how the API server reaches it.
type ServerConfig struct {
	Server   Server
	Endpoint Endpoint
}

// ServersOptions configure Servers: the Registrar's settings and the two
// servers, nil when not configured (no certificate).
type ServersOptions struct {
	Client            kubernetes.Interface
	Ext               apiextensions.Interface
	Instance          string
	ConfigurationName string
	// Admission serves the Validating and Mutating webhooks, Conversion
	// the CRDs' conversions. Two on one address share the first's server,
	// Admission's certificate serving both.
	Admission, Conversion *ServerConfig
	Logger                *slog.Logger
	// StartTimeout bounds Listen's wait for a server (default 10s).
	StartTimeout time.Duration
}

// Servers are the servers the configured webhooks listen on, each started
// once a tree binds a webhook it serves, and the Registrar that points the
// API server at them (docs/operator.md, "Validating and conversion
// webhooks").
type Servers struct {
	logger  *slog.Logger
	timeout time.Duration
	servers map[string]*lazyServer // by address: two kinds on one address share it
	byKind  map[Kind]*lazyServer   // Validating (and Mutating), Conversion
	reg     *Registrar
}

// lazyServer is one server, started when first wanted.
type lazyServer struct {
	srv    *Server
	wanted chan struct{}
	once   sync.Once
	// ready is closed once the server listens (addr), or failed to (err)
	ready chan struct{}
	addr  net.Addr
	err   error
}

func (l *lazyServer) want() { l.once.Do(func() { close(l.wanted) }) }

// NewServers makes the configured servers, none listening yet; nil when
// none is configured.
func NewServers(o ServersOptions) *Servers {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 10 * time.Second
	}
	ro := RegistrarOptions{Client: o.Client, Ext: o.Ext, Instance: o.Instance, ConfigurationName: o.ConfigurationName, Logger: o.Logger}
	w := &Servers{logger: o.Logger, timeout: o.StartTimeout, servers: map[string]*lazyServer{}, byKind: map[Kind]*lazyServer{}}
	for _, s := range []struct {
		kind Kind
		c    *ServerConfig
		ep   **Endpoint
	}{{Validating, o.Admission, &ro.Admission}, {Conversion, o.Conversion, &ro.Conversion}} {
		if s.c == nil {
			continue
		}
		ep := s.c.Endpoint
		*s.ep = &ep
		l := w.servers[s.c.Server.Addr]
		if l == nil {
			srv := s.c.Server
			if srv.Logger == nil {
				srv.Logger = o.Logger.With("server", string(s.kind)+" webhook")
			}
			l = &lazyServer{wanted: make(chan struct{}), ready: make(chan struct{}), srv: &srv}
			w.servers[srv.Addr] = l
		}
		w.byKind[s.kind] = l
	}
	if len(w.servers) == 0 {
		return nil
	}
	w.reg = NewRegistrar(ro)
	return w
}

// Listen starts the servers of kinds and returns once they listen: from
// the first loaded tree on, before any module converged, so that the
// registration the last run left finds a server after a restart. A
// Mutating binding is served by the Validating server: the caller names
// Validating for it.
func (w *Servers) Listen(ctx context.Context, kinds []Kind) error {
	var need []*lazyServer
	for _, k := range kinds {
		if l := w.byKind[k]; l != nil && !slices.Contains(need, l) {
			need = append(need, l)
		}
	}
	for _, l := range need {
		l.want()
		select {
		case <-l.ready:
			if l.err != nil {
				return fmt.Errorf("webhook server on %s: %w", l.srv.Addr, l.err)
			}
		case <-time.After(w.timeout):
			return fmt.Errorf("webhook server on %s: not listening after %s", l.srv.Addr, w.timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Apply registers the bindings; Listen has made the servers they need
// listen first.
func (w *Servers) Apply(ctx context.Context, b Bindings) error { return w.reg.Apply(ctx, b) }

// Serves says whether the server of kind is configured.
func (w *Servers) Serves(kind Kind) bool { return w.reg.Serves(kind) }

// Registered is what is registered now (RegisteredKey values).
func (w *Servers) Registered(ctx context.Context) (map[string]bool, error) {
	return w.reg.Registered(ctx)
}

// Run serves each wanted server with reviewer's answers until ctx ends.
func (w *Servers) Run(ctx context.Context, reviewer Reviewer) {
	handler := NewHandler(HandlerOptions{Reviewer: reviewer, Logger: w.logger})
	var wg sync.WaitGroup
	for _, l := range w.servers {
		l.srv.Handler = handler
		wg.Go(func() {
			select {
			case <-ctx.Done():
				return
			case <-l.wanted:
			}
			// the certificate, the client CAs and the address, before the
			// webhooks are registered (ready): a server that cannot answer
			// must not be one the API server is sent to
			ln, err := l.srv.Listen(ctx)
			if err != nil {
				// the operator goes on: the API server's calls fail and each
				// webhook's failurePolicy decides, as when the pod is down;
				// /status shows the error
				l.err = err
				close(l.ready)
				w.logger.Error("webhook server not started", "address", l.srv.Addr, "error", err)
				return
			}
			l.addr = ln.Addr()
			close(l.ready)
			if err := ln.Serve(ctx); err != nil {
				w.logger.Error("webhook server stopped", "address", l.srv.Addr, "error", err)
			}
		})
	}
	wg.Wait()
}
