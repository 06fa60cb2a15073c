package gitsync

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// streamAbove: objects bigger than this are read from their pack as a
// stream rather than whole (and are not cached), so a checkout's memory
// does not grow with its files.
const streamAbove = 1 << 20

// openStore opens (or creates) the bare object store under CheckoutDir.
// One that cannot be opened (a damaged config, say) is started over: it
// holds nothing a fetch cannot bring back.
func (s *Syncer) openStore() error {
	err := s.tryOpenStore()
	if err == nil {
		return nil
	}
	s.logger.Warn("object store unreadable; starting it over", "err", Scrub(err.Error()))
	if err := os.RemoveAll(s.storeDir()); err != nil {
		return err
	}
	return s.tryOpenStore()
}

// tryOpenStore opens the store. Pack files stay open between reads (a
// checkout reads thousands of objects), up to a bound.
func (s *Syncer) tryOpenStore() error {
	dir := s.storeDir()
	st := filesystem.NewStorageWithOptions(osfs.New(dir), cache.NewObjectLRUDefault(),
		filesystem.Options{MaxOpenDescriptors: 16, LargeObjectThreshold: streamAbove})
	repo, err := git.Open(st, nil)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		repo, err = git.Init(st, nil)
	}
	if err != nil {
		_ = st.Close()
		return fmt.Errorf("object store %s: %w", dir, err)
	}
	// the store's config is readable by hooks: its remote is the URL
	// without credentials (which Auth.method takes from the URL), and a
	// remote written with them by an earlier version is replaced
	_ = repo.DeleteRemote("origin")
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{Scrub(s.opts.URL)}}); err != nil {
		_ = st.Close()
		return fmt.Errorf("remote %s: %w", Scrub(s.opts.URL), err)
	}
	s.repo, s.store = repo, st
	return nil
}

// resetStore empties the object store (checked-out revisions stay).
func (s *Syncer) resetStore() error {
	s.dropped.commit = plumbing.ZeroHash
	_ = s.store.Close()
	if err := os.RemoveAll(s.storeDir()); err != nil {
		return err
	}
	return s.openStore()
}

func (s *Syncer) storeDir() string { return filepath.Join(s.opts.CheckoutDir, "repo.git") }

// damagedError: the object store lacks or cannot read an object that must
// be there (one a revision needs, or one the store's own refs name). A
// sync then starts the store over and fetches again, once.
type damagedError struct{ err error }

func (e *damagedError) Error() string { return e.err.Error() }
func (e *damagedError) Unwrap() error { return e.err }

func damaged(err error) error {
	if err == nil {
		return nil
	}
	return &damagedError{err}
}

func isDamaged(err error) bool {
	var d *damagedError
	return errors.As(err, &d)
}

// dropped remembers the objects fetches left out for their size, so that
// a revision needing one is refused for the limit, not taken for a damaged
// store (which would fetch the same pack again at every sync).
type dropped struct {
	sizes map[plumbing.Hash]int64 // whole objects, by hash
	// deltas (whose hash is unknown) the last fetch left out (of its one
	// or more packs), until a revision is published: then what is missing
	// is damage again
	deltas int
	// commit whose blobs' fetch (fill) left deltas out: its missing blobs
	// are not asked for again, they would be left out again
	commit plumbing.Hash
}

// maxDropped bounds what dropped remembers.
const maxDropped = 1024

// note records what a fetch left out.
func (d *dropped) note(scan *packScan) {
	if len(d.sizes)+len(scan.dropped) > maxDropped || d.sizes == nil {
		d.sizes = map[plumbing.Hash]int64{}
	}
	for h, n := range scan.dropped {
		d.sizes[h] = n
	}
	d.deltas += scan.droppedDeltas
}

// objectErr explains an object a revision needs that the store does not
// give: over the size limit when a fetch left it out for that, a damaged
// (or incomplete) store otherwise.
func (s *Syncer) objectErr(kind string, h plumbing.Hash, path string, err error) error {
	if n, ok := s.dropped.sizes[h]; ok {
		if kind != "blob" {
			return &limitError{path: path, what: fmt.Sprintf("a %s of %s, over the limit of %s per object", kind, size(n), size(s.limits.objectSize()))}
		}
		return &limitError{path: path, what: fmt.Sprintf("a file of %s, over the limit of %s per file", size(n), size(s.limits.fileSize))}
	}
	if !errors.Is(err, plumbing.ErrObjectNotFound) {
		return damaged(fmt.Errorf("%s: %s %s cannot be read from the object store: %w", displayPath(path), kind, h, err))
	}
	if s.dropped.deltas > 0 {
		return &limitError{path: path, what: fmt.Sprintf("%s %s is not in the object store: the fetch left out %d objects over the limit of %s per file",
			kind, h, s.dropped.deltas, size(s.limits.fileSize))}
	}
	return damaged(fmt.Errorf("%s: %s %s is missing from the object store", displayPath(path), kind, h))
}
