package gitsync

import (
	"path/filepath"
	"testing"

	"github.com/addonops/addon-operator/internal/gitserver"
)

// A remote that advertises filtering but refuses blob wants gets one
// whole fetch of the commit, and whole fetches after: no poll fails on
// the refusal, and the revision equals its commit within the paths.
func TestRefusedBlobWantsFallBackToWholeFetch(t *testing.T) {
	m := newMonorepo(t)
	srv, err := gitserver.StartHTTP(filepath.Dir(m.repo.Bare), gitserver.WithFilterRefusingBlobs())
	must(t, err)
	t.Cleanup(srv.Stop)
	s := m.syncer(t, srv.URL("mono"), "main", filepath.Join(t.TempDir(), "c"))
	rev, _, err := s.Sync(t.Context())
	must(t, err)
	m.sameWithinPaths(t, rev.Dir, m.head)
	if !fetcherOf(s).whole {
		t.Fatal("the refusal was not remembered")
	}
	uploads := srv.UploadPackRequests()
	next := m.commit(t, "change a module", map[string]string{"modules/001-one/values.yaml": "one: {v: 2}\n"})
	rev, changed, err := s.Sync(t.Context())
	must(t, err)
	if !changed || rev.Commit != next {
		t.Fatalf("rev = %+v, changed = %v", rev, changed)
	}
	m.sameWithinPaths(t, rev.Dir, next)
	if n := srv.UploadPackRequests() - uploads; n != 1 {
		t.Fatalf("%d upload-pack requests for the next commit, want 1 (a whole fetch)", n)
	}
}
