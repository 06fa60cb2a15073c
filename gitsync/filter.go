package gitsync

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// blobBatch bounds the blobs one request asks for: 4096 want lines are
// 200 KiB of request.
const blobBatch = 4096

// filters: the remote serves partial fetches, a commit's trees without
// its blobs ("filter") and then blobs by hash, which no ref names
// ("allow-reachable-sha1-in-want", which git advertises for
// uploadpack.allowAnySHA1InWant too, as GitHub, GitLab and Gitea do). It
// pays only when the checkout is limited to Paths.
func (f *fetcher) filters(ar *packp.AdvRefs) bool {
	return !f.whole && len(f.paths) > 0 && ar.Capabilities.Supports(capability.Filter) &&
		ar.Capabilities.Supports(capability.AllowReachableSHA1InWant)
}

// fill fetches the blobs of the commit's checked-out paths that the store
// lacks, after a filtered fetch brought its trees only: by hash, in
// batches. Nothing is asked when nothing is missing, or when the remote
// does not filter (its fetches are whole: what is missing is for the
// checkout to find). Nor are blobs a fetch left out for their size, nor
// any for the commit whose blobs' fetch left deltas out: they would be
// left out again.
func (f *fetcher) fill(ctx context.Context, c *object.Commit, sess transport.UploadPackSession, ar *packp.AdvRefs, auth transport.AuthMethod) error {
	if len(f.paths) == 0 || ar != nil && !f.filters(ar) || f.dropped.commit == c.Hash {
		return nil
	}
	tree, err := c.Tree()
	if err != nil {
		return f.dropped.objectErr("tree", c.TreeHash, "", err)
	}
	missing, err := f.missingBlobs(tree)
	if err != nil {
		return fmt.Errorf("revision %s: %w", short(c.Hash.String()), err)
	}
	if len(missing) == 0 {
		return nil
	}
	stateless := stateless(f.url)
	f.dropped.deltas = 0
	// the session opened here last, closed when the next replaces it
	var own transport.UploadPackSession
	defer func() {
		if own != nil {
			own.Close()
		}
	}()
	for batch := range slices.Chunk(missing, blobBatch) {
		if sess == nil || !stateless {
			// a session over ssh or file:// serves one request (and a
			// commit SHA needed none): a new one lists the refs again
			fresh, far, err := f.open(ctx, auth)
			if err != nil {
				return err
			}
			if own != nil {
				own.Close()
			}
			own, sess, ar = fresh, fresh, far
		}
		if !f.filters(ar) {
			return nil
		}
		if err := f.fetchBlobs(ctx, sess, ar, batch); err != nil {
			err = fmt.Errorf("fetch %d blobs of %s: %w", len(batch), short(c.Hash.String()), err)
			if ctx.Err() != nil {
				return err
			}
			return f.fetchWhole(ctx, c.Hash, auth, err)
		}
	}
	if f.dropped.deltas > 0 {
		f.dropped.commit = c.Hash
	}
	return nil
}

// fetchWhole fetches the commit whole (its trees and all their blobs,
// without a filter or haves), after the remote refused the blob wants it
// advertised it would take; from then on this syncer fetches whole, so
// polls do not fail on the same refusal (docs/git.md).
func (f *fetcher) fetchWhole(ctx context.Context, commit plumbing.Hash, auth transport.AuthMethod, cause error) error {
	f.logger.Warn("the remote refused blob wants it advertised; fetching the commit whole from now on", "err", Scrub(cause.Error()))
	sess, ar, err := f.open(ctx, auth)
	if err != nil {
		return errors.Join(cause, err)
	}
	defer sess.Close()
	f.whole = true
	if err := f.fetchPack(ctx, sess, ar, []plumbing.Hash{commit}, 1, nil); err != nil {
		f.whole = false // the next poll tries the filtered fetch again
		return errors.Join(cause, fmt.Errorf("and the whole fetch failed too: %w", err))
	}
	return f.store.setRef("refs/sync/target", commit)
}

// missingBlobs surveys the tree within Paths (the planner refuses a tree
// it would refuse for a checkout before any blob is fetched, but reads no
// blob): it lists the blobs the store lacks, less those a fetch left out
// for their size.
func (f *fetcher) missingBlobs(tree *object.Tree) ([]plumbing.Hash, error) {
	missing, err := f.plan.survey(tree)
	if err != nil {
		return nil, err
	}
	out := make([]plumbing.Hash, 0, len(missing))
	for h := range missing {
		if _, big := f.dropped.sizes[h]; !big {
			out = append(out, h)
		}
	}
	plumbing.HashesSort(out)
	return out, nil
}

// fetchBlobs asks for blobs by hash, with no filter, depth or haves: the
// store's commits lack blobs, so the remote must not leave out one they
// hold.
func (f *fetcher) fetchBlobs(ctx context.Context, sess transport.UploadPackSession, ar *packp.AdvRefs, blobs []plumbing.Hash) error {
	req, err := request(ar)
	if err != nil {
		return err
	}
	req.Wants = blobs
	return f.uploadPack(ctx, sess, req)
}

// stateless: the remote speaks HTTP, where each request stands alone, so
// one session serves many.
func stateless(url string) bool {
	ep, err := transport.NewEndpoint(url)
	return err == nil && (ep.Protocol == "http" || ep.Protocol == "https")
}
