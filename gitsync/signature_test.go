package gitsync

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/addonops/addon-operator/internal/gitserver"
)

func TestSignatureVerification(t *testing.T) {
	f := newFixture(t)
	keys := t.TempDir()
	trusted := filepath.Join(keys, "release.asc")
	home, fpr, err := gitserver.NewSigningKey(t.TempDir(), "release@example.com", trusted)
	must(t, err)
	otherPub := filepath.Join(t.TempDir(), "other.asc")
	otherHome, otherFpr, err := gitserver.NewSigningKey(t.TempDir(), "someone@example.com", otherPub)
	must(t, err)

	f.repo.SignWith(home, fpr)
	signed := f.commit(t, "signed release", map[string]string{"modules/values.yaml": "global: {v: signed}\n"})
	s, err := New(Options[any]{URL: "file://" + f.repo.Bare, Ref: "main", CheckoutDir: filepath.Join(t.TempDir(), "c"),
		VerifyKeysDir: keys, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	rev, _, err := s.Sync(t.Context())
	if err != nil || rev.Commit != signed {
		t.Fatalf("signed by a trusted key: %v, %v", rev, err)
	}

	for _, tc := range []struct {
		name, home, key, want string
	}{
		{name: "unsigned", want: "is not signed"},
		{name: "unknown key", home: otherHome, key: otherFpr, want: "not signed by a trusted key"},
	} {
		f.repo.SignWith(tc.home, tc.key)
		f.commit(t, tc.name, map[string]string{"modules/values.yaml": "global: {v: " + strings.ReplaceAll(tc.name, " ", "-") + "}\n"})
		_, changed, err := s.Sync(t.Context())
		if err == nil || changed || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: changed = %v, err = %v", tc.name, changed, err)
		}
		if s.Current().Commit != signed {
			t.Fatalf("%s: the current revision moved", tc.name)
		}
	}

	// a restart re-verifies the revision on disk against the keys of now
	must(t, os.Remove(trusted))
	must(t, os.Rename(otherPub, trusted))
	restarted, err := New(Options[any]{URL: "file://" + f.repo.Bare, Ref: "main", CheckoutDir: s.opts.CheckoutDir,
		VerifyKeysDir: keys, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	if rev := restarted.Restore(t.Context()); rev != nil {
		t.Fatalf("a revision signed by a key no longer trusted was resumed: %s", rev.Commit)
	}
}
