package webhook

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/addonops/addon-operator/internal/testenv"
)

// servingCert writes a CA and a serving certificate for 127.0.0.1.
func servingCert(t *testing.T) (caFile, certFile, keyFile string) {
	t.Helper()
	ca, cert, key, err := testenv.ServingCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ca, cert, key
}

// freeAddr is a loopback address nothing listens on (as far as a test
// can tell: it was free a moment ago).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// runServers runs w until the test ends.
func runServers(t *testing.T, w *Servers) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx, &blockingReviewer{release: make(chan struct{})}) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// The servers are what is configured: none makes no Servers; each kind
// is served only when its server is configured; two kinds on one address
// share one server.
func TestNewServers(t *testing.T) {
	t.Parallel()
	one := &ServerConfig{Server: Server{Addr: "127.0.0.1:9680"}, Endpoint: Endpoint{Namespace: "ns", Service: "svc"}}
	other := &ServerConfig{Server: Server{Addr: "127.0.0.1:9681"}, Endpoint: Endpoint{Namespace: "ns", Service: "svc2"}}
	for _, tt := range []struct {
		name                  string
		admission, conversion *ServerConfig
		servers               int // 0: NewServers returns nil
		validating, convert   bool
	}{
		{name: "none"},
		{name: "admission", admission: one, servers: 1, validating: true},
		{name: "conversion", conversion: other, servers: 1, convert: true},
		{name: "both", admission: one, conversion: other, servers: 2, validating: true, convert: true},
		{name: "one address", admission: one, conversion: one, servers: 1, validating: true, convert: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := NewServers(ServersOptions{Admission: tt.admission, Conversion: tt.conversion, Logger: quiet})
			if tt.servers == 0 {
				if w != nil {
					t.Fatalf("NewServers = %+v, want nil", w)
				}
				return
			}
			if w == nil || len(w.servers) != tt.servers {
				t.Fatalf("NewServers: %+v, want %d servers", w, tt.servers)
			}
			if w.Serves(Validating) != tt.validating || w.Serves(Conversion) != tt.convert {
				t.Fatalf("serves validating %v, conversion %v; want %v, %v", w.Serves(Validating), w.Serves(Conversion), tt.validating, tt.convert)
			}
			if tt.admission == tt.conversion && w.byKind[Validating] != w.byKind[Conversion] {
				t.Fatal("two kinds on one address: two servers")
			}
		})
	}
}

// A server listens only once a tree binds a webhook it serves: Listen
// starts the servers of the kinds named, returns once they answer, and
// leaves the others unbound.
func TestServersListenOnDemand(t *testing.T) {
	t.Parallel()
	_, cert, key := servingCert(t)
	admission, conversion := freeAddr(t), freeAddr(t)
	w := NewServers(ServersOptions{Logger: quiet,
		Admission:  &ServerConfig{Server: Server{Addr: admission, CertFile: cert, KeyFile: key}},
		Conversion: &ServerConfig{Server: Server{Addr: conversion, CertFile: cert, KeyFile: key}},
	})
	runServers(t, w)
	if listening(admission) || listening(conversion) {
		t.Fatal("a server listens before any webhook is bound")
	}
	if err := w.Listen(t.Context(), []Kind{Conversion}); err != nil {
		t.Fatal(err)
	}
	if !listening(conversion) {
		t.Fatal("conversion server not listening after Listen returned")
	}
	if listening(admission) {
		t.Fatal("the admission server listens though no admission webhook is bound")
	}
	// again, and with the other kind: the running one is not started twice
	if err := w.Listen(t.Context(), []Kind{Conversion, Validating}); err != nil {
		t.Fatal(err)
	}
	if !listening(admission) {
		t.Fatal("admission server not listening after Listen returned")
	}
}

// Listen fails, naming the server's address, when the server cannot
// start, when it does not start in time, or when ctx ends.
func TestServersListenFails(t *testing.T) {
	t.Parallel()
	_, cert, key := servingCert(t)
	for _, tt := range []struct {
		name    string
		server  Server
		run     bool // Run is serving
		timeout time.Duration
		cancel  bool
		want    string
	}{
		{name: "no certificate", server: Server{CertFile: filepath.Join(t.TempDir(), "tls.crt"), KeyFile: key}, run: true,
			want: "webhook server certificate"},
		{name: "a client CA that does not load", server: Server{CertFile: cert, KeyFile: key, ClientCAFiles: []string{filepath.Join(t.TempDir(), "ca.crt")}},
			run: true, want: "webhook server on"},
		{name: "not started in time", server: Server{CertFile: cert, KeyFile: key}, timeout: 50 * time.Millisecond,
			want: "not listening after 50ms"},
		{name: "ctx ended", server: Server{CertFile: cert, KeyFile: key}, cancel: true, want: context.Canceled.Error()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.server.Addr = freeAddr(t)
			w := NewServers(ServersOptions{Logger: quiet, StartTimeout: tt.timeout, Admission: &ServerConfig{Server: tt.server}})
			if tt.run {
				runServers(t, w)
			}
			ctx, cancel := context.WithCancel(t.Context())
			if tt.cancel {
				cancel()
			}
			defer cancel()
			err := w.Listen(ctx, []Kind{Validating})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Listen: %v, want %q", err, tt.want)
			}
			if tt.run && !strings.Contains(err.Error(), tt.server.Addr) {
				t.Fatalf("Listen: %v, want the address %s", err, tt.server.Addr)
			}
		})
	}
}

// Two kinds on one address are one server: the first kind's
// certificate serves both, and Listen for either starts it.
func TestServersShareAnAddress(t *testing.T) {
	t.Parallel()
	_, cert, key := servingCert(t)
	addr := freeAddr(t)
	w := NewServers(ServersOptions{Logger: quiet,
		Admission:  &ServerConfig{Server: Server{Addr: addr, CertFile: cert, KeyFile: key}},
		Conversion: &ServerConfig{Server: Server{Addr: addr, CertFile: filepath.Join(t.TempDir(), "missing.crt"), KeyFile: key}},
	})
	runServers(t, w)
	if err := w.Listen(t.Context(), []Kind{Conversion}); err != nil {
		t.Fatalf("conversion on the admission server's address: %v", err)
	}
	if !listening(addr) {
		t.Fatal("the shared server does not listen")
	}
	if err := w.Listen(t.Context(), []Kind{Validating}); err != nil {
		t.Fatal(err)
	}
}
