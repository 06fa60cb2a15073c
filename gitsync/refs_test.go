package gitsync

import (
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitBare runs git in the served repository.
func (f *fixture) gitBare(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("git", append([]string{"-C", f.repo.Bare}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
}

// Short names resolve as git resolves them (tag before branch); a name
// that is both is an error naming both; a full ref picks one.
func TestRefsResolveAsGit(t *testing.T) {
	f := newFixture(t)
	f.gitBare(t, "update-ref", "refs/heads/v1", f.c3) // a branch pushed beside tag v1
	f.gitBare(t, "update-ref", "refs/tags/feature", f.c1)
	tests := []struct {
		ref, want, full, wantErr string
	}{
		{ref: "v1", wantErr: `ref "v1" is ambiguous: the remote has both refs/tags/v1 and refs/heads/v1`},
		{ref: "feature", wantErr: `ref "feature" is ambiguous: the remote has both refs/tags/feature and refs/heads/feature`},
		{ref: "refs/tags/v1", want: f.c1, full: "refs/tags/v1"},
		{ref: "refs/heads/v1", want: f.c3, full: "refs/heads/v1"},
		{ref: "light", want: f.c2, full: "refs/tags/light"},
		{ref: "main", want: f.c2, full: "refs/heads/main"},
		{ref: "heads/main", wantErr: `ref "heads/main" not found`},
		{ref: "refs/heads/nope", wantErr: `ref "refs/heads/nope" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			s := f.syncer(t, f.http.URL("addons"), tt.ref, Auth{Username: "alice", PasswordFile: f.passFile})
			rev, _, err := s.Sync(t.Context())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, rev = %+v; want %q", err, rev, tt.wantErr)
				}
				if s.Current() != nil {
					t.Fatalf("published %+v", s.Current())
				}
				return
			}
			must(t, err)
			if rev.Commit != tt.want || false {
				t.Fatalf("rev = %+v; want %s from %s", rev, tt.want, tt.full)
			}
		})
	}
}

// A branch pushed under a followed tag's name does not take over: the
// name turns ambiguous, and once the tag is gone it resolves to another
// full ref than before, which is refused (across a restart too) until
// the ref is set again.
func TestBranchBesideTagDoesNotTakeOver(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(t.TempDir(), "checkout")
	open := func(ref string) *Syncer[any] {
		s, err := New(Options[any]{URL: "file://" + f.repo.Bare, Ref: ref, CheckoutDir: dir,
			Require: []string{"modules"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		must(t, err)
		return s
	}
	s := open("v1")
	rev, _, err := s.Sync(t.Context())
	must(t, err)
	if rev.Commit != f.c1 {
		t.Fatalf("rev = %+v", rev)
	}
	refused := func(s *Syncer[any], want string) {
		t.Helper()
		rev, changed, err := s.Sync(t.Context())
		if err == nil || changed || !strings.Contains(err.Error(), want) {
			t.Fatalf("rev = %+v, changed = %v, err = %v; want %q", rev, changed, err, want)
		}
		if cur := s.Current(); cur != nil && cur.Commit != f.c1 {
			t.Fatalf("current moved to %s", cur.Commit)
		}
		if !strings.Contains(s.Status().LastError, want) {
			t.Fatalf("status error = %q", s.Status().LastError)
		}
	}

	f.gitBare(t, "update-ref", "refs/heads/v1", f.c3)
	refused(s, "both refs/tags/v1 and refs/heads/v1")

	f.gitBare(t, "update-ref", "-d", "refs/tags/v1")
	moved := `ref "v1" now resolves to refs/heads/v1, not refs/tags/v1 as before`
	refused(s, moved)
	s.SetRef("v1") // the source ConfigMap's watch says the same again
	refused(s, moved)
	// a restart with the same setting: the history on disk carries the record
	refused(open("v1"), moved)

	s.SetRef("refs/heads/v1")
	rev, changed, err := s.Sync(t.Context())
	must(t, err)
	if !changed || rev.Commit != f.c3 {
		t.Fatalf("after set-ref: rev = %+v, changed = %v", rev, changed)
	}
	// set again to the short name, it follows what it resolves to now
	s.SetRef("v1")
	_, _, err = s.Sync(t.Context())
	must(t, err)
	if st := s.Status(); st.LastError != "" {
		t.Fatalf("status = %+v", st)
	}
}
