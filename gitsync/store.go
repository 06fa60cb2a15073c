package gitsync

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// streamAbove: objects bigger than this are read from their pack as a
// stream rather than whole (and are not cached), so a checkout's memory
// does not grow with its files.
const streamAbove = 1 << 20

// objectStore is the bare repository under CheckoutDir (repo.git): the
// objects fetches brought, the refs that offer them as haves, and where
// a shallow history ends. It holds nothing a fetch cannot bring back, so
// one that cannot be opened is started over.
type objectStore struct {
	dir    string
	url    string // the remote, without credentials, for the store's config
	logger *slog.Logger
	repo   *git.Repository
	st     *filesystem.Storage
}

var (
	_ packStore    = (*objectStore)(nil)
	_ objectReader = (*objectStore)(nil)
	_ commitReader = (*objectStore)(nil)
)

// openStore opens (or creates) the object store at dir.
func openStore(dir, url string, logger *slog.Logger) (*objectStore, error) {
	o := &objectStore{dir: dir, url: Scrub(url), logger: logger}
	return o, o.open()
}

// open opens (or creates) the store. One that cannot be opened (a
// damaged config, say) is started over.
func (o *objectStore) open() error {
	err := o.tryOpen()
	if err == nil {
		return nil
	}
	o.logger.Warn("object store unreadable; starting it over", "err", Scrub(err.Error()))
	if err := os.RemoveAll(o.dir); err != nil {
		return err
	}
	return o.tryOpen()
}

// tryOpen opens the store. Pack files stay open between reads (a
// checkout reads thousands of objects), up to a bound.
func (o *objectStore) tryOpen() error {
	st := filesystem.NewStorageWithOptions(osfs.New(o.dir), cache.NewObjectLRUDefault(),
		filesystem.Options{MaxOpenDescriptors: 16, LargeObjectThreshold: streamAbove})
	repo, err := git.Open(st, nil)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		repo, err = git.Init(st, nil)
	}
	if err != nil {
		_ = st.Close()
		return fmt.Errorf("object store %s: %w", o.dir, err)
	}
	// the store's config is readable by hooks: its remote is the URL
	// without credentials (which Auth.method takes from the URL), and a
	// remote written with them by an earlier version is replaced
	_ = repo.DeleteRemote("origin")
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{o.url}}); err != nil {
		_ = st.Close()
		return fmt.Errorf("remote %s: %w", o.url, err)
	}
	o.repo, o.st = repo, st
	return nil
}

// reset empties the object store (checked-out revisions stay).
func (o *objectStore) reset() error {
	_ = o.st.Close()
	if err := os.RemoveAll(o.dir); err != nil {
		return err
	}
	return o.open()
}

// has reports whether the store holds an object; an error reading the
// store (a garbled index) is damage.
func (o *objectStore) has(h plumbing.Hash) (bool, error) {
	err := o.repo.Storer.HasEncodedObject(h)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, plumbing.ErrObjectNotFound):
		return false, nil
	}
	return false, damaged(fmt.Errorf("object store: %w", err))
}

// blob reads a blob's object (its header; the content streams from it).
func (o *objectStore) blob(h plumbing.Hash) (plumbing.EncodedObject, error) {
	return o.repo.Storer.EncodedObject(plumbing.BlobObject, h)
}

// tree reads a tree.
func (o *objectStore) tree(h plumbing.Hash) (*object.Tree, error) {
	return object.GetTree(o.repo.Storer, h)
}

// peel follows annotated tags to their commit. An object the store
// cannot read is damage; one of another type is not a commit.
func (o *objectStore) peel(h plumbing.Hash) (*object.Commit, error) {
	for range 10 {
		obj, err := o.repo.Storer.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return nil, damaged(fmt.Errorf("commit %s cannot be read from the object store: %w", h, err))
		}
		switch obj.Type() {
		case plumbing.TagObject:
			tag, err := object.DecodeTag(o.repo.Storer, obj)
			if err != nil {
				return nil, damaged(fmt.Errorf("tag %s: %w", h, err))
			}
			h = tag.Target
		case plumbing.CommitObject:
			c, err := object.DecodeCommit(o.repo.Storer, obj)
			if err != nil {
				return nil, damaged(fmt.Errorf("commit %s: %w", h, err))
			}
			return c, nil
		default:
			return nil, fmt.Errorf("%s is a %s, not a commit", h, obj.Type())
		}
	}
	return nil, fmt.Errorf("%s: tag chain too long", h)
}

// commit reads a commit (not through tags).
func (o *objectStore) commit(h plumbing.Hash) (*object.Commit, error) {
	return o.repo.CommitObject(h)
}

// setRef points one of the store's own refs (refs/sync/...) at h.
func (o *objectStore) setRef(name plumbing.ReferenceName, h plumbing.Hash) error {
	return damaged(o.repo.Storer.SetReference(plumbing.NewHashReference(name, h)))
}

// haves are the commits the store's refs point at, which the remote need
// not send again; none means nothing was fetched yet.
func (o *objectStore) haves() ([]plumbing.Hash, error) {
	refs, err := o.repo.References()
	if err != nil {
		return nil, damaged(err)
	}
	defer refs.Close()
	var out []plumbing.Hash
	err = refs.ForEach(func(r *plumbing.Reference) error {
		if r.Type() == plumbing.HashReference && strings.HasPrefix(r.Name().String(), "refs/sync/") && !slices.Contains(out, r.Hash()) {
			out = append(out, r.Hash())
		}
		return nil
	})
	return out, damaged(err)
}

// shallows are where a shallow store's history ends (none: not shallow).
func (o *objectStore) shallows() ([]plumbing.Hash, error) {
	sh, err := o.repo.Storer.Shallow()
	return sh, damaged(err)
}

// addShallows records where a shallow fetch's history ends.
func (o *objectStore) addShallows(more []plumbing.Hash) error {
	shallows, err := o.repo.Storer.Shallow()
	if err != nil {
		return damaged(err)
	}
	for _, h := range more {
		if !slices.Contains(shallows, h) {
			shallows = append(shallows, h)
		}
	}
	return damaged(o.repo.Storer.SetShallow(shallows))
}

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
