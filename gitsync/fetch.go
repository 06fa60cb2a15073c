package gitsync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/storage/memory"
)

// fetcher talks to the remote: it lists its refs, fetches a ref's commit
// (blob-less where the remote filters, then the checked-out paths' blobs
// by hash), and takes each pack it receives into the object store within
// the pack budgets, leaving out objects over the limits (dropped).
type fetcher struct {
	url    string
	dir    string // CheckoutDir: received packs are written beside the store
	logger *slog.Logger
	limits limits
	paths  []string // Options.Paths, cleaned
	store  packStore
	plan   surveyor
	// dropped: objects fetches left out for their size
	dropped *dropped
	// whole: the remote refused the blob wants it advertised; fetches are
	// whole from then on (fetchWhole)
	whole bool
}

var _ fetching = (*fetcher)(nil)

// packStore is what fetching needs of the object store.
type packStore interface {
	has(h plumbing.Hash) (bool, error)
	haves() ([]plumbing.Hash, error)
	shallows() ([]plumbing.Hash, error)
	addShallows(more []plumbing.Hash) error
	setRef(name plumbing.ReferenceName, h plumbing.Hash) error
	storePack(ctx context.Context, f *os.File) error
	reset() error
}

// surveyor lists the blobs a tree's checked-out paths need that the
// store lacks, refusing the tree as a checkout would (the planner).
type surveyor interface {
	survey(tree *object.Tree) (map[plumbing.Hash]bool, error)
}

// reset starts the object store over.
func (f *fetcher) reset() error {
	f.dropped.commit = plumbing.ZeroHash
	return f.store.reset()
}

// published: a revision was published, so an object missing from now on
// is damage again, not one the last fetch left out.
func (f *fetcher) published() { f.dropped.deltas = 0 }

// open starts a conversation with the remote's upload-pack and lists its
// refs (one round trip); a fetch in the same session asks for objects
// without listing them again.
func (f *fetcher) open(ctx context.Context, auth transport.AuthMethod) (transport.UploadPackSession, *packp.AdvRefs, error) {
	ep, err := transport.NewEndpoint(f.url)
	if err != nil {
		return nil, nil, err
	}
	c, err := client.NewClient(ep)
	if err != nil {
		return nil, nil, err
	}
	sess, err := c.NewUploadPackSession(ep, auth)
	if err != nil {
		return nil, nil, err
	}
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		sess.Close()
		return nil, nil, fmt.Errorf("list remote refs: %w", err)
	}
	return sess, ar, nil
}

// resolve finds the desired ref among the listed ones: the full remote
// name and the hash it points at. A commit SHA needs no listing (ar is
// nil). A short name is looked up as git's rev-parse does, tag before
// branch, so a branch pushed under a pinned tag's name does not take
// over; a name that is both is refused, naming both, unless given in full
// (docs/git.md, "Refs").
func resolve(ar *packp.AdvRefs, ref string) (string, string, error) {
	if ar == nil {
		return "", ref, nil
	}
	all, err := ar.AllReferences()
	if err != nil {
		return "", "", fmt.Errorf("list remote refs: %w", err)
	}
	byName := map[string]*plumbing.Reference{}
	for name, r := range all {
		if r.Type() == plumbing.HashReference {
			byName[name.String()] = r
		}
	}
	if ref == "" {
		return remoteHead(all, byName)
	}
	if ref == "HEAD" || strings.HasPrefix(ref, "refs/") {
		if r, ok := byName[ref]; ok {
			return ref, r.Hash().String(), nil
		}
		return "", "", fmt.Errorf("ref %q not found on the remote", ref)
	}
	var found []string
	for _, full := range []string{"refs/tags/" + ref, "refs/heads/" + ref} {
		if _, ok := byName[full]; ok {
			found = append(found, full)
		}
	}
	switch len(found) {
	case 0:
		return "", "", fmt.Errorf("ref %q not found on the remote", ref)
	case 1:
		return found[0], byName[found[0]].Hash().String(), nil
	}
	return "", "", fmt.Errorf("ref %q is ambiguous: the remote has both %s and %s; set it in full", ref, found[0], found[1])
}

// remoteHead is what the remote's HEAD points at.
func remoteHead(all memory.ReferenceStorage, byName map[string]*plumbing.Reference) (string, string, error) {
	head := all[plumbing.HEAD]
	if head == nil {
		return "", "", errors.New("the remote has no HEAD; set GIT_REF")
	}
	if head.Type() != plumbing.SymbolicReference {
		return "HEAD", head.Hash().String(), nil
	}
	if r, ok := byName[head.Target().String()]; ok {
		return head.Target().String(), r.Hash().String(), nil
	}
	return "", "", fmt.Errorf("the remote's HEAD points at %s, which it does not list", head.Target())
}

// fetch brings the objects of remoteRef into the object store (only what
// is missing; forced, so a force-pushed ref is followed): commits and
// trees only from a remote that filters (fill brings the blobs). A named
// ref is fetched in the session that listed it; a commit SHA fetches
// branches and tags, then looks for it. Whether what arrived is complete
// is for the checkout to find (it reads every object it needs).
func (f *fetcher) fetch(ctx context.Context, sess transport.UploadPackSession, ar *packp.AdvRefs, remoteRef, hash string, auth transport.AuthMethod) error {
	want := plumbing.NewHash(hash)
	if here, err := f.store.has(want); err != nil || here {
		return err // already here (a ref moved back, or a pinned SHA we have)
	}
	haves, err := f.store.haves()
	if err != nil {
		return err
	}
	f.dropped.deltas = 0
	depth := 0
	if remoteRef != "" && len(haves) == 0 {
		// the first fetch needs only the commit, not its history
		depth = 1
	}
	if sess != nil && remoteRef != "" {
		err = f.fetchRef(ctx, sess, ar, want, depth, haves)
	} else {
		err = f.fetchAll(ctx, auth, haves)
	}
	if err != nil {
		return fmt.Errorf("fetch %s: %w", orHash(remoteRef, hash), err)
	}
	if here, err := f.store.has(want); err != nil || here {
		return err
	}
	if depth == 0 && remoteRef != "" && shallow(f.store) {
		// the ref moved behind the shallow boundary (a force-push to an
		// older commit): start the store over with that commit
		f.logger.Info("ref moved behind the fetched history; fetching it afresh", "ref", remoteRef)
		if err := f.reset(); err != nil {
			return err
		}
		// a session serves one fetch: talk to the remote afresh
		fresh, far, err := f.open(ctx, auth)
		if err != nil {
			return err
		}
		defer fresh.Close()
		return f.fetch(ctx, fresh, far, remoteRef, hash, auth)
	}
	return fmt.Errorf("commit %s %w", hash, ErrCommitNotFound)
}

// fetchRef fetches one commit (with depth, only it) and keeps it as
// refs/sync/target, which the next fetch offers as a have.
func (f *fetcher) fetchRef(ctx context.Context, sess transport.UploadPackSession, ar *packp.AdvRefs, want plumbing.Hash, depth int, haves []plumbing.Hash) error {
	if err := f.fetchPack(ctx, sess, ar, []plumbing.Hash{want}, depth, haves); err != nil {
		return err
	}
	return f.store.setRef("refs/sync/target", want)
}

// fetchAll fetches every branch and tag (a commit SHA can be anywhere in
// their history) and keeps them as refs/sync/heads/* and refs/sync/tags/*.
func (f *fetcher) fetchAll(ctx context.Context, auth transport.AuthMethod, haves []plumbing.Hash) error {
	sess, ar, err := f.open(ctx, auth)
	if err != nil {
		return err
	}
	defer sess.Close()
	all, err := ar.AllReferences()
	if err != nil {
		return fmt.Errorf("list remote refs: %w", err)
	}
	keep := map[plumbing.ReferenceName]plumbing.Hash{}
	var wants []plumbing.Hash
	for name, r := range all {
		n := name.String()
		if r.Type() != plumbing.HashReference || strings.HasSuffix(n, "^{}") {
			continue
		}
		switch {
		case strings.HasPrefix(n, "refs/heads/"):
			keep[plumbing.ReferenceName("refs/sync/heads/"+strings.TrimPrefix(n, "refs/heads/"))] = r.Hash()
		case strings.HasPrefix(n, "refs/tags/"):
			keep[plumbing.ReferenceName("refs/sync/tags/"+strings.TrimPrefix(n, "refs/tags/"))] = r.Hash()
		default:
			continue
		}
		here, err := f.store.has(r.Hash())
		if err != nil {
			return err
		}
		if !here && !slices.Contains(wants, r.Hash()) {
			wants = append(wants, r.Hash())
		}
	}
	if len(wants) > 0 {
		if err := f.fetchPack(ctx, sess, ar, wants, 0, haves); err != nil {
			return err
		}
	}
	for name, h := range keep {
		if err := f.store.setRef(name, h); err != nil {
			return err
		}
	}
	return nil
}

// fetchPack asks the remote for wants (with depth, only those commits),
// telling it which commits the store has (haves), and stores the pack it
// sends. A remote that filters sends commits and trees only: fill then
// fetches the blobs the checkout needs.
func (f *fetcher) fetchPack(ctx context.Context, sess transport.UploadPackSession, ar *packp.AdvRefs, wants []plumbing.Hash, depth int, haves []plumbing.Hash) (err error) {
	req, err := request(ar)
	if err != nil {
		return err
	}
	req.Wants = wants
	// like git, tell the remote where a shallow store's history ends, so
	// it does not count on objects behind it
	if req.Shallows, err = f.store.shallows(); err != nil {
		return err
	}
	if depth > 0 {
		req.Depth = packp.DepthCommits(depth)
	}
	if depth > 0 || len(req.Shallows) > 0 {
		if err := req.Capabilities.Set(capability.Shallow); err != nil {
			return err
		}
	}
	if f.filters(ar) {
		req.Filter = packp.FilterBlobNone()
		if err := req.Capabilities.Set(capability.Filter); err != nil {
			return err
		}
	}
	req.Haves = haves
	return f.uploadPack(ctx, sess, req)
}

// request is an upload-pack request with the capabilities every fetch
// asks for.
func request(ar *packp.AdvRefs) (*packp.UploadPackRequest, error) {
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	if ar.Capabilities.Supports(capability.NoProgress) {
		if err := req.Capabilities.Set(capability.NoProgress); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// uploadPack sends the request and stores the pack the remote answers
// with (receivePack), and, for a depth, where the history now ends.
func (f *fetcher) uploadPack(ctx context.Context, sess transport.UploadPackSession, req *packp.UploadPackRequest) (err error) {
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, resp.Close()) }()
	if !req.Depth.IsZero() && len(resp.Shallows) > 0 {
		if err := f.store.addShallows(resp.Shallows); err != nil {
			return err
		}
	}
	var pack io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		pack = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		pack = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	return f.receivePack(ctx, pack)
}

// shallow: the store was fetched with a depth.
func shallow(store packStore) bool {
	sh, err := store.shallows()
	return err == nil && len(sh) > 0
}

func orHash(ref, hash string) string {
	if ref != "" {
		return ref
	}
	return hash
}
