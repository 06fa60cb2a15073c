package secretfile

import (
	"errors"
	"fmt"
	"strings"
)

// Reason says why a file did not decrypt. Every reason is terminal: the
// same file with the same keys fails the same way, so a caller reports it
// and waits for a change (a new revision, a new key) rather than retrying.
type Reason string

const (
	// NoKey: the keyring holds no key at all (or there is no keyring).
	NoKey Reason = "SecretNoKey"
	// WrongKey: the keyring's keys are none of the file's recipients, or
	// none of them opens the data key.
	WrongKey Reason = "SecretWrongKey"
	// Tampered: a value or the MAC does not authenticate, or the MAC
	// does not match the plaintext: the file was changed after SOPS
	// wrote it.
	Tampered Reason = "SecretTampered"
	// Malformed: the sops metadata or an encrypted value is not what
	// SOPS writes, or uses a feature this package does not read.
	Malformed Reason = "SecretMalformed"
	// TooLarge: the file is over MaxFileSize.
	TooLarge Reason = "SecretTooLarge"
)

// Sentinels for errors.Is, one per Reason.
var (
	ErrNoKey     = errors.New("no decryption key")
	ErrWrongKey  = errors.New("wrong decryption key")
	ErrTampered  = errors.New("encrypted file was tampered with")
	ErrMalformed = errors.New("malformed SOPS file")
	ErrTooLarge  = errors.New("file too large")
)

// Error is every failure Decrypt, Open and Preview return. It never holds
// key material: recipients are public keys.
type Error struct {
	File   string
	Reason Reason
	// Path is the leaf a value error is about (empty for the file).
	Path Path
	// Line is the file's line of Path, or of the metadata at fault (0
	// when unknown).
	Line int
	// Recipients are the keys the file was encrypted for: age public keys
	// (age1…), and "pgp:FINGERPRINT", "kms:ARN"… for other key sources.
	Recipients []string
	// Keyring are the public keys of the identities the keyring held.
	Keyring []string
	Detail  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if len(e.Path) > 0 {
		fmt.Fprintf(&b, ": key %s", e.Path)
	}
	b.WriteString(": ")
	switch e.Reason {
	case NoKey:
		b.WriteString("no decryption key configured")
	case WrongKey:
		b.WriteString("none of the configured keys decrypts it")
	case Tampered:
		b.WriteString("tampered with")
	case Malformed:
		b.WriteString("malformed SOPS file")
	case TooLarge:
		b.WriteString("too large")
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if len(e.Recipients) > 0 {
		fmt.Fprintf(&b, " (encrypted for %s)", strings.Join(e.Recipients, ", "))
	}
	if e.Reason == WrongKey {
		if len(e.Keyring) > 0 {
			fmt.Fprintf(&b, " (keyring holds %s)", strings.Join(e.Keyring, ", "))
		}
	}
	return b.String()
}

// Terminal is true: retrying with the same file and keys cannot succeed.
func (e *Error) Terminal() bool { return true }

// Is matches the sentinel of the error's Reason.
func (e *Error) Is(target error) bool {
	switch e.Reason {
	case NoKey:
		return target == ErrNoKey
	case WrongKey:
		return target == ErrWrongKey
	case Tampered:
		return target == ErrTampered
	case Malformed:
		return target == ErrMalformed
	case TooLarge:
		return target == ErrTooLarge
	}
	return false
}

// Path is a leaf's place in a document: map keys (string) and list
// indices (int), from the top.
type Path []any

// String writes a path as a.b[0].c; a key with a dot or bracket is
// quoted.
func (p Path) String() string {
	var b strings.Builder
	for i, e := range p {
		switch v := e.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", v)
		case string:
			if i > 0 {
				b.WriteByte('.')
			}
			if v == "" || strings.ContainsAny(v, ".[]\"") {
				fmt.Fprintf(&b, "%q", v)
			} else {
				b.WriteString(v)
			}
		}
	}
	return b.String()
}

// Equal compares two paths.
func (p Path) Equal(o Path) bool {
	if len(p) != len(o) {
		return false
	}
	for i := range p {
		if p[i] != o[i] {
			return false
		}
	}
	return true
}
