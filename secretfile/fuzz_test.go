package secretfile

import (
	"context"
	"errors"
	"testing"
)

// FuzzOpen: no input makes decryption or a preview panic, and every
// failure is an *Error (mutations of a real SOPS file reach the metadata
// and value parsers).
func FuzzOpen(f *testing.F) {
	for _, name := range []string{"config.enc.yaml", "config.enc.json", "regex.enc.yaml"} {
		f.Add(fixture(f, name))
	}
	f.Add([]byte("a: &x [*x]\nsops: {mac: x, lastmodified: y}\n"))
	k := keyring(f, keyA)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, fn := range []func() error{
			func() error { _, err := k.Open(context.Background(), "f.yaml", data); return err },
			func() error { _, err := Preview("f.yaml", data); return err },
		} {
			var e *Error
			if err := fn(); err != nil && !errors.As(err, &e) {
				t.Fatalf("not an *Error: %v", err)
			}
		}
	})
}
