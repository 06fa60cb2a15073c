package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/kubernetes"

	"github.com/addonops/addon-operator/lifecycle"
	"github.com/addonops/addon-operator/webhook"
)

// webhookServerOptions are one webhook server's settings, under
// shell-operator's names (VALIDATING_WEBHOOK_*, CONVERSION_WEBHOOK_*).
type webhookServerOptions struct {
	ListenAddress, ListenPort string
	ServerCert, ServerKey, CA string
	ClientCA                  []string
	ServiceName               string
	// URL, ours: the base URL the API server calls instead of the Service
	URL string
	// defaultCert, defaultKey: paths that may be absent (no server)
	defaultCert, defaultKey string
}

// webhookOptions are the admission and conversion webhook servers'
// settings (docs/operator.md, "Validating and conversion webhooks").
type webhookOptions struct {
	Validating, Conversion webhookServerOptions
	ConfigurationName      string
}

func (o *webhookServerOptions) bind(fs *pflag.FlagSet, e *env, kind, prefix, port, certDir, service, what string) {
	env := func(s string) string { return prefix + s }
	o.defaultCert, o.defaultKey = certDir+"/tls.crt", certDir+"/tls.key"
	flag := func(s string) string { return kind + "-webhook-" + s }
	fs.StringVar(&o.ListenAddress, flag("listen-address"), e.str([]string{env("LISTEN_ADDRESS")}, "0.0.0.0"), "address of the "+what+" webhook HTTPS server (env "+env("LISTEN_ADDRESS")+")")
	fs.StringVar(&o.ListenPort, flag("listen-port"), e.str([]string{env("LISTEN_PORT")}, port), "port of the "+what+" webhook HTTPS server (env "+env("LISTEN_PORT")+")")
	fs.StringVar(&o.ServerCert, flag("server-cert"), e.str([]string{env("SERVER_CERT")}, certDir+"/tls.crt"), "serving certificate of the "+what+" webhook server; the server runs only when it and the key exist (env "+env("SERVER_CERT")+")")
	fs.StringVar(&o.ServerKey, flag("server-key"), e.str([]string{env("SERVER_KEY")}, certDir+"/tls.key"), "its private key (env "+env("SERVER_KEY")+")")
	fs.StringVar(&o.CA, flag("ca"), e.str([]string{env("CA")}, certDir+"/ca.crt"), "CA bundle the API server verifies the "+what+" webhook server with (env "+env("CA")+")")
	var clientCA []string
	if v := e.str([]string{env("CLIENT_CA")}, ""); v != "" {
		clientCA = strings.Split(v, ",")
	}
	fs.StringArrayVar(&o.ClientCA, flag("client-ca"), clientCA, "CA of the client certificates the "+what+" webhook server requires; may be repeated (env "+env("CLIENT_CA")+", comma-separated)")
	fs.StringVar(&o.ServiceName, flag("service-name"), e.str([]string{env("SERVICE_NAME")}, service), "Service in the operator's namespace the API server calls the "+what+" webhooks through (env "+env("SERVICE_NAME")+")")
	fs.StringVar(&o.URL, flag("url"), e.str([]string{env("URL")}, ""), "base URL the API server calls instead of the Service, e.g. https://10.0.0.5:9680 for an operator outside the cluster (env "+env("URL")+")")
}

func (o *webhookOptions) bind(fs *pflag.FlagSet, e *env) {
	o.Validating.bind(fs, e, "validating", "VALIDATING_WEBHOOK_", "9680", "/validating-certs", "addon-operator-validating-svc", "validating")
	o.Conversion.bind(fs, e, "conversion", "CONVERSION_WEBHOOK_", "9681", "/conversion-certs", "addon-operator-conversion-svc", "conversion")
	fs.StringVar(&o.ConfigurationName, "validating-webhook-configuration-name", e.str([]string{"VALIDATING_WEBHOOK_CONFIGURATION_NAME"}, "addon-operator-hooks"),
		"name of the ValidatingWebhookConfiguration (and MutatingWebhookConfiguration) the operator writes (env VALIDATING_WEBHOOK_CONFIGURATION_NAME)")
}

// configured: the server runs when its certificate and key exist. A path
// set to a missing file is an error; the defaults may be absent.
func (o *webhookServerOptions) configured(kind string) (bool, error) {
	explicit := o.ServerCert != o.defaultCert || o.ServerKey != o.defaultKey
	_, errCert := os.Stat(o.ServerCert)
	_, errKey := os.Stat(o.ServerKey)
	if errCert == nil && errKey == nil {
		return true, nil
	}
	if explicit {
		return false, fmt.Errorf("%s webhook server: %w", kind, errors.Join(errCert, errKey))
	}
	return false, nil
}

func (o *webhookServerOptions) endpoint(namespace string) *webhook.Endpoint {
	ep := &webhook.Endpoint{Namespace: namespace, Service: o.ServiceName, URL: o.URL}
	if _, err := os.Stat(o.CA); err == nil {
		ep.CAFile = o.CA
	}
	return ep
}

func (o *webhookServerOptions) address() string {
	return net.JoinHostPort(o.ListenAddress, o.ListenPort)
}

// webhookServers are the servers the configured webhooks listen on, each
// started once a tree binds a webhook it serves.
type webhookServers struct {
	logger  *slog.Logger
	servers map[string]*lazyServer // by address: two kinds on one address share it
	byKind  map[string]*lazyServer // validating (and mutating), conversion
	reg     *webhook.Registrar
}

// lazyServer is one server, started when first wanted.
type lazyServer struct {
	srv    *webhook.Server
	wanted chan struct{}
	once   sync.Once
	// ready is closed once the server listens, or failed to (err)
	ready chan struct{}
	err   error
}

func (l *lazyServer) want() { l.once.Do(func() { close(l.wanted) }) }

// newWebhookServers wires the webhook servers that have certificates; nil
// when none has.
func newWebhookServers(o webhookOptions, namespace, instance string, client kubernetes.Interface, ext apiextensions.Interface, logger *slog.Logger) (*webhookServers, error) {
	opts := webhook.RegistrarOptions{Client: client, Ext: ext, Instance: instance, ConfigurationName: o.ConfigurationName, Logger: logger}
	w := &webhookServers{logger: logger, servers: map[string]*lazyServer{}, byKind: map[string]*lazyServer{}}
	for _, s := range []struct {
		kind string
		o    *webhookServerOptions
		ep   **webhook.Endpoint
	}{{"validating", &o.Validating, &opts.Admission}, {"conversion", &o.Conversion, &opts.Conversion}} {
		ok, err := s.o.configured(s.kind)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		*s.ep = s.o.endpoint(namespace)
		addr := s.o.address()
		l := w.servers[addr]
		if l == nil {
			// the first kind's certificate serves both on a shared address
			l = &lazyServer{wanted: make(chan struct{}), ready: make(chan struct{}), srv: &webhook.Server{
				Addr: addr, CertFile: s.o.ServerCert, KeyFile: s.o.ServerKey, ClientCAFiles: s.o.ClientCA, Logger: logger.With("server", s.kind+" webhook"),
			}}
			w.servers[addr] = l
		}
		w.byKind[s.kind] = l
	}
	if len(w.servers) == 0 {
		return nil, nil
	}
	w.reg = webhook.NewRegistrar(opts)
	return w, nil
}

// serverStartTimeout bounds the wait for a server to listen before its
// webhooks are registered.
const serverStartTimeout = 10 * time.Second

// Listen starts the servers of kinds and returns once they listen: from
// the first loaded tree on, before any module converged, so that the
// registration the last run left finds a server after a restart
// (docs/operator.md, "Validating and conversion webhooks").
func (w *webhookServers) Listen(ctx context.Context, kinds []webhook.Kind) error {
	var need []*lazyServer
	for _, k := range kinds {
		if l := w.byKind[string(k)]; l != nil && !slices.Contains(need, l) {
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
		case <-time.After(serverStartTimeout):
			return fmt.Errorf("webhook server on %s: not listening after %s", l.srv.Addr, serverStartTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Apply registers the bindings; the lifecycle's sync has made the servers
// they need listen first (Listen, with the kinds the tree binds, a
// Mutating binding served by the Validating server).
func (w *webhookServers) Apply(ctx context.Context, b webhook.Bindings) error {
	return w.reg.Apply(ctx, b)
}

func (w *webhookServers) Serves(kind webhook.Kind) bool { return w.reg.Serves(kind) }

func (w *webhookServers) Registered(ctx context.Context) (map[string]bool, error) {
	return w.reg.Registered(ctx)
}

var _ lifecycle.WebhookRegistrar = (*webhookServers)(nil)

// run serves each wanted server with the operator's answers until ctx
// ends.
func (w *webhookServers) run(ctx context.Context, reviewer webhook.Reviewer) {
	handler := webhook.NewHandler(webhook.HandlerOptions{Reviewer: reviewer, Logger: w.logger})
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
			close(l.ready)
			if err := ln.Serve(ctx); err != nil {
				w.logger.Error("webhook server stopped", "address", l.srv.Addr, "error", err)
			}
		})
	}
	wg.Wait()
}
