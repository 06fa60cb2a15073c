package kube

// A release's newest record read from the cluster ahead of its module's
// Helm step, beside the hooks the module runs first (docs/performance.md,
// "The fourth round").

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// aheadTTL is how old a read made ahead may be when Upgrade takes it and
// still stand for Upgrade's own read of the cluster. Between the read and
// the first record Upgrade writes (this, and the render, the conflict
// GETs and the repair a read of its own has before it too), the
// install's record create (or the upgrade's next revision) fails if
// another writer took the revision meanwhile; what it cannot catch is a
// release that another writer created and then bounded past its first
// revision (maxHistory + 1 writes), which this leaves no room for. A hook
// that runs longer leaves the read unused and Upgrade reads again.
const aheadTTL = time.Second

// readsAhead are the reads made ahead, one per release name, each taken
// once.
type readsAhead struct {
	mu    sync.Mutex
	reads map[string]*readAhead
}

// readAhead is one read: rel is nil when the release does not exist.
type readAhead struct {
	started time.Time
	done    chan struct{}
	rel     *release.Release
	err     error
}

// ReadAhead starts reading the release's newest record from the cluster
// when Upgrade would read it anyway: the snapshot of release records does
// not answer for it, or answers that it does not exist (an install, whose
// look for the name's history Helm would make then). A release the
// snapshot has is not read (an unchanged release makes no request). Only
// Upgrade takes the read; the module's run, its disabling and its purge
// are tasks of one queue that run one at a time, so nothing of ours
// writes the release between this and the run's Upgrade.
//
// The read is one request through Helm's storage, which takes no
// context: it ends with the request, not with the run.
func (h *Helm) ReadAhead(name string) {
	now := h.now()
	if rel, _, fresh := h.snapshot.get(name, now); fresh && rel != nil {
		return
	}
	r := &readAhead{started: now, done: make(chan struct{})}
	h.ahead.put(name, r, now)
	go func() {
		defer close(r.done)
		r.rel, r.err = readLast(h.cfg.Releases, name)
	}()
}

// readLast is the release's newest record in releases (the cluster), nil
// when it has none.
func readLast(releases *storage.Storage, name string) (*release.Release, error) {
	rel, err := releases.Last(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read release %s: %w", name, err)
	}
	return rel, nil
}

// put keeps r as name's read, in place of an earlier one, and drops the
// reads too old to be taken (one whose hook failed is never taken).
func (a *readsAhead) put(name string, r *readAhead, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for n, old := range a.reads {
		if now.Sub(old.started) > aheadTTL {
			delete(a.reads, n)
		}
	}
	a.reads[name] = r
}

// take returns name's read made ahead, waiting for it to end, when there
// is one and it is at most aheadTTL old now; ok false when the caller must
// read for itself (none, too old, or failed).
func (a *readsAhead) take(ctx context.Context, name string, now func() time.Time) (rel *release.Release, ok bool, err error) {
	a.mu.Lock()
	r := a.reads[name]
	delete(a.reads, name)
	a.mu.Unlock()
	if r == nil {
		return nil, false, nil
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	if r.err != nil || now().Sub(r.started) > aheadTTL {
		return nil, false, nil
	}
	return r.rel, true, nil
}
