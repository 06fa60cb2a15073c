package gitsync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// storePack indexes a received pack (the file holds it and nothing
// after it) and moves it into the object store. go-git's own pack writer
// indexes without a context: here every object the indexer reads or
// builds first checks ctx, so a pack that takes long to index (deltas
// that each make a big object) stops with the sync's deadline instead of
// holding the syncer, and start-up, past it (docs/git.md, "Limits").
func (o *objectStore) storePack(ctx context.Context, f *os.File) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	idx := new(idxfile.Writer)
	parser, err := packfile.NewParser(packfile.NewScanner(f), idx, ctxObserver{ctx})
	if err != nil {
		return err
	}
	sum, err := parser.Parse()
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("index the fetched pack: %w", ctxErr)
	}
	if err != nil {
		return damaged(fmt.Errorf("index the fetched pack: %w", err))
	}
	return damaged(o.addPack(f.Name(), sum, idx))
}

// addPack puts the pack and its index into the store's objects/pack: the
// index first, so that a pack the store lists always has one, then the
// pack, each by a rename (or a link of the received file).
func (o *objectStore) addPack(packFile string, sum plumbing.Hash, w *idxfile.Writer) error {
	dir := filepath.Join(o.dir, "objects", "pack")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	base := filepath.Join(dir, "pack-"+sum.String())
	if _, err := os.Stat(base + ".pack"); err == nil {
		return nil // the same pack again
	}
	idx, err := w.Index()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".idx-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := idxfile.NewEncoder(tmp).Encode(idx); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), base+".idx"); err != nil {
		return err
	}
	if err := os.Link(packFile, base+".pack"); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	// the store lists its packs once: make it look again
	o.st.Reindex()
	return nil
}

// ctxObserver stops a pack's parsing once ctx is done: the parser calls
// it for each object it reads and each it resolves.
type ctxObserver struct{ ctx context.Context }

func (o ctxObserver) OnHeader(uint32) error { return o.ctx.Err() }

func (o ctxObserver) OnInflatedObjectHeader(plumbing.ObjectType, int64, int64) error {
	return o.ctx.Err()
}

func (o ctxObserver) OnInflatedObjectContent(plumbing.Hash, int64, uint32, []byte) error {
	return o.ctx.Err()
}

func (o ctxObserver) OnFooter(plumbing.Hash) error { return o.ctx.Err() }
