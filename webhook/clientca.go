package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// clientCAs is tls.Config.GetConfigForClient: base requiring the pool of
// the client CA files, read again when a file changes (a rotated Secret,
// as for the serving certificate); a change that does not load keeps the
// last good pool. One config serves while the files stay as they are, so
// TLS session tickets resume within it; a new pool gets a new config,
// whose ticket keys differ, so no session resumes past a CA change
// unchecked.
func clientCAs(files []string, base *tls.Config, now func() time.Time, logger *slog.Logger) func(*tls.ClientHelloInfo) (*tls.Config, error) {
	r := &reloading[*tls.Config]{what: "webhook client CA", files: files, now: now, logger: logger,
		read: func() (*tls.Config, error) {
			pool, err := readPool(files)
			if err != nil {
				return nil, err
			}
			cfg := base.Clone()
			cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
			return cfg, nil
		}}
	return func(*tls.ClientHelloInfo) (*tls.Config, error) { return r.get() }
}

func readPool(files []string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("webhook client CA: %w", err)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("webhook client CA %s: no PEM certificate in it", f)
		}
	}
	return pool, nil
}
