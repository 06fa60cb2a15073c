package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// clientCAs is the pool of ClientCAFiles and the TLS config that requires
// it, read again when a file changes (a rotated Secret, as for the serving
// certificate); a change that does not load keeps the last good pool.
type clientCAs struct {
	files  []string
	base   *tls.Config // the server's config, without client CAs
	now    func() time.Time
	logger *slog.Logger

	mu      sync.Mutex
	current *tls.Config // base with the current pool
	stamp   string
	checked time.Time
}

// config is tls.Config.GetConfigForClient: the config of the current
// pool. One config serves while the files stay as they are, so TLS
// session tickets resume within it; a new pool gets a new config, whose
// ticket keys differ, so no session resumes past a CA change unchecked.
func (c *clientCAs) config(*tls.ClientHelloInfo) (*tls.Config, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.current != nil && now.Sub(c.checked) < certReloadEvery {
		return c.current, nil
	}
	c.checked = now
	stamp, err := fileStamp(c.files...)
	if err == nil && stamp == c.stamp && c.current != nil {
		return c.current, nil
	}
	var pool *x509.CertPool
	if err == nil {
		pool, err = readPool(c.files)
	}
	if err != nil {
		if c.current != nil {
			c.logger.Warn("webhook client CA not reloaded: keeping the last good one", "error", err)
			return c.current, nil
		}
		return nil, err
	}
	if c.current != nil {
		c.logger.Info("webhook client CA reloaded", "files", c.files)
	}
	cfg := c.base.Clone()
	cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	c.current, c.stamp = cfg, stamp
	return c.current, nil
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
