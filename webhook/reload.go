package webhook

import (
	"crypto/tls"
	"log/slog"
	"sync"
	"time"
)

// reloading is a value read from files, read again when they change
// (a rotated Secret), checked at most every certReloadEvery; a change
// that does not load (a half-written file) keeps the last good value.
// The serving certificate and the client CA pool are both kept this way.
type reloading[T any] struct {
	what   string // for the log: "webhook certificate"
	files  []string
	read   func() (T, error)
	now    func() time.Time
	logger *slog.Logger

	mu      sync.Mutex
	current T
	loaded  bool
	stamp   string // the files' sizes and times when current was read
	checked time.Time
}

func (r *reloading[T]) get() (T, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if r.loaded && now.Sub(r.checked) < certReloadEvery {
		return r.current, nil
	}
	r.checked = now
	stamp, err := fileStamp(r.files...)
	if err == nil && stamp == r.stamp && r.loaded {
		return r.current, nil
	}
	var v T
	if err == nil {
		v, err = r.read()
	}
	if err != nil {
		if r.loaded {
			r.logger.Warn(r.what+" not reloaded: keeping the last good one", "error", err)
			return r.current, nil
		}
		return v, err
	}
	if r.loaded {
		r.logger.Info(r.what+" reloaded", "files", r.files)
	}
	r.current, r.loaded, r.stamp = v, true, stamp
	return v, nil
}

// certFiles is the serving certificate (tls.Config.GetCertificate).
func certFiles(cert, key string, now func() time.Time, logger *slog.Logger) func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r := &reloading[*tls.Certificate]{what: "webhook certificate", files: []string{cert, key}, now: now, logger: logger,
		read: func() (*tls.Certificate, error) {
			c, err := tls.LoadX509KeyPair(cert, key)
			return &c, err
		}}
	return func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return r.get() }
}
