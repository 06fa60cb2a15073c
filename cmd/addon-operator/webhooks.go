package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"

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

func (o *webhookServerOptions) endpoint(namespace string) webhook.Endpoint {
	ep := webhook.Endpoint{Namespace: namespace, Service: o.ServiceName, URL: o.URL}
	if _, err := os.Stat(o.CA); err == nil {
		ep.CAFile = o.CA
	}
	return ep
}

func (o *webhookServerOptions) address() string {
	return net.JoinHostPort(o.ListenAddress, o.ListenPort)
}

// newWebhookServers wires the webhook servers that have certificates
// (webhook.Servers starts each once a tree binds a webhook it serves); nil
// when none has.
func newWebhookServers(o webhookOptions, namespace, instance string, client kubernetes.Interface, ext apiextensions.Interface, logger *slog.Logger) (*webhook.Servers, error) {
	opts := webhook.ServersOptions{Client: client, Ext: ext, Instance: instance, ConfigurationName: o.ConfigurationName, Logger: logger}
	for _, s := range []struct {
		kind string
		o    *webhookServerOptions
		c    **webhook.ServerConfig
	}{{"validating", &o.Validating, &opts.Admission}, {"conversion", &o.Conversion, &opts.Conversion}} {
		ok, err := s.o.configured(s.kind)
		if err != nil {
			return nil, err
		}
		if ok {
			*s.c = &webhook.ServerConfig{Endpoint: s.o.endpoint(namespace), Server: webhook.Server{
				Addr: s.o.address(), CertFile: s.o.ServerCert, KeyFile: s.o.ServerKey, ClientCAFiles: s.o.ClientCA, Logger: logger.With("server", s.kind+" webhook"),
			}}
		}
	}
	return webhook.NewServers(opts), nil
}

var _ lifecycle.WebhookRegistrar = (*webhook.Servers)(nil)
