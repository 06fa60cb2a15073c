package gitsync

import (
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// dropped remembers the objects fetches left out for their size, so that
// a revision needing one is refused for the limit, not taken for a damaged
// store (which would fetch the same pack again at every sync). The fetcher
// writes it; planning and writing a revision read it (objectErr).
type dropped struct {
	lim   limits
	sizes map[plumbing.Hash]int64 // whole objects, by hash
	// deltas (whose hash is unknown) the last fetch left out (of its one
	// or more packs), until a revision is published: then what is missing
	// is damage again
	deltas int
	// commit whose blobs' fetch (fill) left deltas out: its missing blobs
	// are not asked for again, they would be left out again
	commit plumbing.Hash
}

var _ explainer = (*dropped)(nil)

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
func (d *dropped) objectErr(kind string, h plumbing.Hash, path string, err error) error {
	if n, ok := d.sizes[h]; ok {
		if kind != "blob" {
			return &limitError{path: path, what: fmt.Sprintf("a %s of %s, over the limit of %s per object", kind, size(n), size(d.lim.objectSize()))}
		}
		return &limitError{path: path, what: fmt.Sprintf("a file of %s, over the limit of %s per file", size(n), size(d.lim.fileSize))}
	}
	if !errors.Is(err, plumbing.ErrObjectNotFound) {
		return damaged(fmt.Errorf("%s: %s %s cannot be read from the object store: %w", displayPath(path), kind, h, err))
	}
	if d.deltas > 0 {
		return &limitError{path: path, what: fmt.Sprintf("%s %s is not in the object store: the fetch left out %d objects over the limit of %s per file",
			kind, h, d.deltas, size(d.lim.fileSize))}
	}
	return damaged(fmt.Errorf("%s: %s %s is missing from the object store", displayPath(path), kind, h))
}
