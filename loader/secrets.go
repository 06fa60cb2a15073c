package loader

import (
	"fmt"
	"strings"

	"github.com/addonops/addon-operator/secretfile"
	"github.com/addonops/addon-operator/values"
)

// secretOptions are WithSecrets': the keyring a SOPS-encrypted values.yaml
// is decrypted with, or a preview's placeholders.
type secretOptions struct {
	keyring *secretfile.Keyring
	preview bool
}

// WithSecrets makes Load decrypt SOPS-encrypted values.yaml files (a
// module's, and the common one of a modules directory) in memory with k,
// re-read at each load so a rotated key takes effect without a restart
// (docs/operator.md, "Config in git"). With preview set and no key, each
// encrypted value reads as secretfile.Placeholder, its structure kept, for
// render and diff: nothing loaded so may be applied. The decrypted values
// are checked against the schemas as any values are; Model.Encrypted
// lists the paths that were encrypted, for redaction.
//
// Without this option an encrypted values.yaml is decrypted with
// WithClusterConfig's keyring (or previewed as it says); with neither, or
// with a nil k and no preview, it fails the load with the file and its
// recipients. WithClusterConfig's settings without a keyring take this
// one's, so one key setting serves both.
func WithSecrets(k *secretfile.Keyring, preview bool) Option {
	return func(l *Loader) { l.secrets = &secretOptions{keyring: k, preview: preview} }
}

// parseValues parses a values file's bytes, decrypting a SOPS-encrypted
// one first and noting its encrypted paths (module: the module's values
// key for a module's values.yaml, which holds that key alone; "" for a
// common values.yaml, whose top-level keys are the ConfigMap's).
func (s *session) parseValues(file string, b []byte, module string) (values.Values, error) {
	if !secretfile.IsEncrypted(b) {
		return values.ParseYAML(file, b)
	}
	var p *secretfile.Plain
	var err error
	switch {
	case s.secrets != nil && s.secrets.keyring != nil:
		p, err = s.secrets.keyring.Open(s.ctx, file, b)
	case s.secrets != nil && s.secrets.preview:
		p, err = secretfile.Preview(file, b)
		s.placeholders = s.placeholders || (err == nil && len(p.Encrypted) > 0)
	default:
		// a nil keyring says NoKey with the file and its recipients
		var none *secretfile.Keyring
		p, err = none.Open(s.ctx, file, b)
	}
	if err != nil {
		return nil, err // a *secretfile.Error names the file and recipients
	}
	v, err := values.ParseYAML(file, p.Data)
	if err != nil {
		return nil, err
	}
	for _, path := range p.Encrypted {
		key, _ := path[0].(string)
		if module != "" && key != module {
			continue // another module's key: ignored with a warning, as in any values.yaml
		}
		if s.secrets.keyring == nil && module == "" {
			if len(path) == 1 && strings.HasSuffix(key, "Enabled") {
				return nil, fileErr(file, fmt.Errorf("key %s: encrypted, and a preview without a key cannot read a flag: keep <module>Enabled keys out of encryption (sops --encrypted-regex) or preview with a key", key))
			}
		}
		s.noteEncrypted(key, append(secretfile.Path(nil), path[1:]...))
	}
	return v, nil
}

// noteEncrypted records an encrypted path below a values key once.
func (s *session) noteEncrypted(key string, rest secretfile.Path) {
	if s.encrypted == nil {
		s.encrypted = map[string][]secretfile.Path{}
	}
	for _, q := range s.encrypted[key] {
		if q.Equal(rest) {
			return
		}
	}
	s.encrypted[key] = append(s.encrypted[key], rest)
}
