package gitsync

import (
	"errors"
	"fmt"
)

// The default limits fit a pod of a few hundred MiB of memory and an
// emptyDir of a GiB: a sync holds at most a few objects of
// DefaultMaxFileSize in memory, and a revision on disk is at most
// DefaultMaxCheckoutSize (two or three are kept).
const (
	DefaultMaxFileSize     = 16 << 20
	DefaultMaxFiles        = 20000
	DefaultMaxCheckoutSize = 512 << 20

	// maxLinkTarget bounds a symlink's target, and maxPath a path in a
	// revision, as PATH_MAX does.
	maxLinkTarget = 4096
	maxPath       = 4096
)

// limits are the Options' limits with their defaults applied; 0 is none.
type limits struct {
	fileSize     int64 // a blob of the checked-out paths, and any blob a fetch stores
	files        int   // files, symlinks and directories of the checked-out paths
	checkoutSize int64 // the files of the checked-out paths, summed
}

// limitsOf reads the limits of o: zero is the default, negative is none.
func limitsOf[T any](o Options[T]) limits {
	pick := func(v, def int64) int64 {
		switch {
		case v == 0:
			return def
		case v < 0:
			return 0
		}
		return v
	}
	return limits{
		fileSize:     pick(o.MaxFileSize, DefaultMaxFileSize),
		files:        int(pick(int64(o.MaxFiles), DefaultMaxFiles)),
		checkoutSize: pick(o.MaxCheckoutSize, DefaultMaxCheckoutSize),
	}
}

// objectSize bounds the objects other than blobs that a fetch stores
// (commits, trees, tags, and deltas of an unknown type): go-git's pack
// indexer holds each whole in memory. It is never below the default file
// size, so a small MaxFileSize does not refuse ordinary trees.
func (l limits) objectSize() int64 {
	if l.fileSize == 0 {
		return 0
	}
	return max(l.fileSize, DefaultMaxFileSize)
}

// A fetched pack's budgets follow from the revision's limits: a pack holds
// more than the checked-out paths (commits, trees, files elsewhere when the
// remote does not filter, history for a commit SHA), so they are multiples
// of them (docs/git.md, "Limits").
const (
	packObjectsPerFile = 10 // objects per GIT_MAX_FILES
	packBytesPerByte   = 2  // pack bytes per byte of GIT_MAX_CHECKOUT_SIZE
	packExpandPerByte  = 4  // inflated and delta-made bytes, likewise
)

// packObjects bounds the objects of one fetched pack: go-git's indexer
// keeps a few hundred bytes for each (0: none).
func (l limits) packObjects() int64 { return int64(l.files) * packObjectsPerFile }

// packBytes bounds one fetched pack on disk (0: none).
func (l limits) packBytes() int64 { return l.checkoutSize * packBytesPerByte }

// packExpand bounds what one pack expands to: the objects it holds whole,
// inflated, and those its deltas make (0: none). Tiny deltas can each make
// an object of the file limit: the indexer builds every one.
func (l limits) packExpand() int64 { return l.checkoutSize * packExpandPerByte }

// errPackBudget: a fetched pack is over a budget; it is refused whole.
var errPackBudget = errors.New("over the budget of a fetched pack")

// over reports whether n exceeds the limit (0: none).
func over(n, limit int64) bool { return limit > 0 && n > limit }

// limitError refuses a revision over a limit; it names the path.
type limitError struct {
	path, what string
}

func (e *limitError) Error() string { return displayPath(e.path) + ": " + e.what }

// size prints a byte count as the limits are usually written.
func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// displayPath names a path of a tree in messages ("" is its root).
func displayPath(p string) string {
	if p == "" {
		return "the root tree"
	}
	return p
}
