package gitsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/addonops/addon-operator/loader"
)

// Options configure a Syncer.
type Options struct {
	URL string
	// Ref is a branch, a tag, a full ref (refs/pull/42/head) or a commit
	// SHA; empty means the remote's HEAD.
	Ref string
	// CheckoutDir holds the object store, the revisions and the current link.
	CheckoutDir string
	Auth        Auth
	// Timeout bounds every network operation (default 60s).
	Timeout time.Duration
	// Require lists paths (relative to the repository root) every revision
	// must have, such as the modules directory.
	Require []string
	// VerifyKeysDir holds trusted OpenPGP public keys (armored, one or more
	// files); when set, a revision whose commit is unsigned or signed by
	// another key is refused.
	VerifyKeysDir string
	// Paths limits the checkout to these subtrees (empty: the whole tree):
	// the operator needs only the modules and global hooks directories.
	Paths []string
	// Validate checks a checked-out revision before it is published, and
	// a revision restored from disk before it is used again; what it loaded
	// rides on the Revision (Model). A refused revision is never current.
	Validate func(ctx context.Context, dir string) (*loader.Model, error)
	// InUse lists commits whose checkouts must stay on disk (the running
	// model's files); old revisions are removed otherwise.
	InUse  func() []string
	Logger *slog.Logger
	Now    func() time.Time
	// After is the clock of the poll loop (default time.After).
	After func(time.Duration) <-chan time.Time
}

// Revision is one checked-out commit.
type Revision struct {
	Commit    string    `json:"commit"`
	Ref       string    `json:"ref"`
	Subject   string    `json:"subject"`
	Author    string    `json:"author"`
	Time      time.Time `json:"time"`
	AppliedAt time.Time `json:"appliedAt,omitzero"`
	// Dir is the revision's checkout.
	Dir string `json:"-"`
	// Model is what Options.Validate loaded from Dir (nil without it).
	Model *loader.Model `json:"-"`
}

// Status is what `source status` and /status show.
type Status struct {
	URL        string     `json:"url"`
	DesiredRef string     `json:"desiredRef"`
	Current    *Revision  `json:"current,omitempty"`
	LastSync   time.Time  `json:"lastSync,omitzero"`
	LastError  string     `json:"lastError,omitempty"`
	History    []Revision `json:"history"`
}

const (
	historySize = 10
	currentLink = "current"
	historyFile = "history.json"
)

// Syncer keeps a checkout of one ref of a remote repository.
type Syncer struct {
	opts   Options
	logger *slog.Logger
	repo   *git.Repository
	store  *filesystem.Storage

	mu      sync.Mutex
	ref     string
	current *Revision
	// resolved is the remote hash the current revision came from (a tag
	// object for an annotated tag), compared on every poll.
	resolved string
	status   Status
	trigger  chan struct{}
	// cleaning: old revisions are being removed, after a publish and off
	// its critical path; the next checkout waits for it
	cleaning sync.WaitGroup
}

var shaRe = regexp.MustCompile(`^[0-9a-f]{40}$`)

// New opens (or creates) the object store under CheckoutDir.
func New(opts Options) (*Syncer, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.After == nil {
		opts.After = time.After
	}
	if err := os.MkdirAll(opts.CheckoutDir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(opts.CheckoutDir, 0o700); err != nil {
		return nil, err
	}
	if err := forgetOtherPaths(opts.CheckoutDir, opts.Paths); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(opts.CheckoutDir, "revisions"), 0o700); err != nil {
		return nil, err
	}
	s := &Syncer{
		opts: opts, logger: opts.Logger.With("source", Scrub(opts.URL)), ref: opts.Ref,
		trigger: make(chan struct{}, 1),
	}
	if err := s.openStore(); err != nil {
		return nil, err
	}
	s.status = Status{URL: Scrub(opts.URL), DesiredRef: opts.Ref, History: []Revision{}}
	return s, nil
}

// forgetOtherPaths removes the revisions on disk when they were checked
// out with other Paths: a new revision is built from the previous one, so
// it must hold exactly the subtrees wanted now. The object store stays.
func forgetOtherPaths(checkoutDir string, paths []string) error {
	marker := filepath.Join(checkoutDir, "paths")
	want := strings.Join(paths, "\n")
	if have, err := os.ReadFile(marker); err == nil && string(have) == want {
		return nil
	}
	if err := os.RemoveAll(filepath.Join(checkoutDir, "revisions")); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(checkoutDir, currentLink)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.WriteFile(marker, []byte(want), 0o600)
}

// Restore resumes from the revisions an earlier run left on disk, newest
// first: the first whose commit is in the store, whose signature the
// current keys accept and which Validate accepts (against today's
// configuration) becomes current again, so a restarted operator runs it
// while the remote is unreachable, and the next revision is written
// incrementally. It returns nil when none qualifies. A revision refused
// here is never run, even if it was published before.
func (s *Syncer) Restore(ctx context.Context) *Revision {
	for _, rev := range s.readHistory() {
		dir := filepath.Join(s.opts.CheckoutDir, "revisions", rev.Commit)
		if !shaRe.MatchString(rev.Commit) {
			continue
		}
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		if err := s.reuse(ctx, &rev, dir); err != nil {
			s.logger.Warn("revision on disk not resumed", "revision", rev.Commit, "err", Scrub(err.Error()))
			continue
		}
		s.mu.Lock()
		s.current = &rev
		s.status.History = []Revision{rev}
		s.mu.Unlock()
		s.logger.Info("resumed the revision on disk", "revision", rev.Commit, "subject", rev.Subject)
		c := rev
		return &c
	}
	return nil
}

// reuse checks a revision on disk as a new one is checked, and publishes it.
func (s *Syncer) reuse(ctx context.Context, rev *Revision, dir string) error {
	c, err := s.repo.CommitObject(plumbing.NewHash(rev.Commit))
	if err != nil {
		return err
	}
	if err := s.verify(c); err != nil {
		return err
	}
	rev.Subject, rev.Author, rev.Time = firstLine(c.Message), c.Author.Name+" <"+c.Author.Email+">", c.Author.When
	rev.Dir = dir
	if s.opts.Validate != nil {
		if rev.Model, err = s.opts.Validate(ctx, dir); err != nil {
			return err
		}
	}
	return s.publish(dir)
}

// readHistory lists the revisions published by earlier runs, newest
// first; a checkout without the list (an older layout) offers the one its
// current link points at.
func (s *Syncer) readHistory() []Revision {
	var hist []Revision
	if b, err := os.ReadFile(filepath.Join(s.opts.CheckoutDir, historyFile)); err == nil {
		if json.Unmarshal(b, &hist) == nil {
			return hist
		}
	}
	if target, err := os.Readlink(s.CurrentDir()); err == nil {
		hist = append(hist, Revision{Commit: filepath.Base(target)})
	}
	return hist
}

// writeHistory records the published revisions for the next run's Restore.
func (s *Syncer) writeHistory(hist []Revision) error {
	b, err := json.Marshal(hist)
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.opts.CheckoutDir, "."+historyFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.opts.CheckoutDir, historyFile))
}

// SetRef changes the desired ref and triggers a sync.
func (s *Syncer) SetRef(ref string) {
	s.mu.Lock()
	changed := s.ref != ref
	s.ref = ref
	s.status.DesiredRef = ref
	if changed {
		s.resolved = ""
	}
	s.mu.Unlock()
	s.Trigger()
}

// Trigger asks the poll loop to sync now.
func (s *Syncer) Trigger() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

// Status reports the source.
func (s *Syncer) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	st.History = slices.Clone(s.status.History)
	if s.current != nil {
		c := *s.current
		st.Current = &c
	}
	return st
}

// Current is the published revision (nil before the first sync).
func (s *Syncer) Current() *Revision {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == nil {
		return nil
	}
	c := *s.current
	return &c
}

// CurrentDir is the stable path of the published revision (a symlink).
func (s *Syncer) CurrentDir() string { return filepath.Join(s.opts.CheckoutDir, currentLink) }

// Sync resolves the desired ref and, when it moved, fetches, checks out,
// validates and publishes the new revision. It reports whether a new
// revision was published. On error the current revision stays.
func (s *Syncer) Sync(ctx context.Context) (*Revision, bool, error) {
	rev, changed, err := s.sync(ctx)
	s.mu.Lock()
	s.status.LastSync = s.opts.Now()
	s.status.LastError = ""
	if err != nil {
		s.status.LastError = Scrub(err.Error())
	}
	s.mu.Unlock()
	if err != nil {
		return nil, false, fmt.Errorf("sync %s: %w", Scrub(s.opts.URL), scrubErr(err))
	}
	return rev, changed, nil
}

func (s *Syncer) sync(ctx context.Context) (*Revision, bool, error) {
	s.mu.Lock()
	ref, resolvedBefore, cur := s.ref, s.resolved, s.current
	s.mu.Unlock()
	auth, err := s.opts.Auth.method(s.opts.URL)
	if err != nil {
		return nil, false, err
	}
	netCtx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	var sess transport.UploadPackSession
	var ar *packp.AdvRefs
	if !shaRe.MatchString(ref) {
		if sess, ar, err = s.open(netCtx, auth); err != nil {
			return nil, false, err
		}
		defer sess.Close()
	}
	remoteRef, hash, err := resolve(ar, ref)
	if err != nil {
		return nil, false, err
	}
	if cur != nil && hash == resolvedBefore {
		return cur, false, nil // one round trip, no objects
	}
	if err := s.fetch(netCtx, sess, ar, remoteRef, hash, auth); err != nil {
		return nil, false, err
	}
	commit, err := s.peel(plumbing.NewHash(hash))
	if err != nil {
		return nil, false, err
	}
	if cur != nil && commit.Hash.String() == cur.Commit {
		s.mu.Lock()
		s.resolved = hash
		s.mu.Unlock()
		return cur, false, nil
	}
	if err := s.verify(commit); err != nil {
		return nil, false, err
	}
	rev := &Revision{
		Commit: commit.Hash.String(), Ref: ref, Subject: firstLine(commit.Message),
		Author: commit.Author.Name + " <" + commit.Author.Email + ">", Time: commit.Author.When,
	}
	dir, err := s.checkout(commit, cur)
	if err != nil {
		return nil, false, err
	}
	rev.Dir = dir
	for _, p := range s.opts.Require {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return nil, false, fmt.Errorf("revision %s has no %s", short(rev.Commit), p)
		}
	}
	if s.opts.Validate != nil {
		if rev.Model, err = s.opts.Validate(ctx, dir); err != nil {
			return nil, false, fmt.Errorf("revision %s (%s) refused: %w", short(rev.Commit), rev.Subject, err)
		}
	}
	if err := s.publish(dir); err != nil {
		return nil, false, err
	}
	rev.AppliedAt = s.opts.Now()
	s.mu.Lock()
	s.current, s.resolved = rev, hash
	s.status.History = append([]Revision{*rev}, s.status.History...)
	if len(s.status.History) > historySize {
		s.status.History = s.status.History[:historySize]
	}
	hist := slices.Clone(s.status.History)
	s.mu.Unlock()
	if err := s.writeHistory(hist); err != nil {
		s.logger.Warn("revision history not saved; a restart resumes from the current link only", "err", err)
	}
	s.cleaning.Go(s.cleanup)
	s.logger.Info("revision published", "revision", rev.Commit, "ref", ref, "subject", rev.Subject)
	return rev, true, nil
}

// open starts a conversation with the remote's upload-pack and lists its
// refs (one round trip); a fetch in the same session asks for objects
// without listing them again.
func (s *Syncer) open(ctx context.Context, auth transport.AuthMethod) (transport.UploadPackSession, *packp.AdvRefs, error) {
	ep, err := transport.NewEndpoint(s.opts.URL)
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

// resolve finds the desired ref among the listed ones: the remote name
// and the hash it points at. A commit SHA needs no listing (ar is nil).
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
		byName[name.String()] = r
	}
	candidates := []string{ref, "refs/heads/" + ref, "refs/tags/" + ref}
	if ref == "" {
		head := byName["HEAD"]
		if head == nil {
			return "", "", errors.New("the remote has no HEAD; set GIT_REF")
		}
		if head.Type() == plumbing.SymbolicReference {
			candidates = []string{head.Target().String()}
		} else {
			return "HEAD", head.Hash().String(), nil
		}
	}
	for _, c := range candidates {
		if r, ok := byName[c]; ok && r.Type() == plumbing.HashReference {
			return c, r.Hash().String(), nil
		}
	}
	return "", "", fmt.Errorf("ref %q not found on the remote", ref)
}

// fetch brings the objects of remoteRef into the object store (only what
// is missing; forced, so a force-pushed ref is followed). A named ref is
// fetched in the session that listed it; a commit SHA fetches branches and
// tags, then looks for it.
func (s *Syncer) fetch(ctx context.Context, sess transport.UploadPackSession, ar *packp.AdvRefs, remoteRef, hash string, auth transport.AuthMethod) error {
	if _, err := s.repo.Object(plumbing.AnyObject, plumbing.NewHash(hash)); err == nil {
		return nil // already here (a ref moved back, or a pinned SHA we have)
	}
	haves, err := s.haves()
	if err != nil {
		return err
	}
	depth := 0
	if remoteRef != "" && len(haves) == 0 {
		// the first fetch needs only the commit, not its history
		depth = 1
	}
	if sess != nil && remoteRef != "" {
		err = s.fetchPack(ctx, sess, ar, plumbing.NewHash(hash), depth, haves)
	} else {
		specs := []config.RefSpec{"+refs/heads/*:refs/sync/heads/*", "+refs/tags/*:refs/sync/tags/*"}
		err = s.repo.FetchContext(ctx, &git.FetchOptions{RemoteName: "origin", RefSpecs: specs, Auth: auth, Force: true, Tags: git.NoTags})
		if errors.Is(err, git.NoErrAlreadyUpToDate) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("fetch %s: %w", orHash(remoteRef, hash), err)
	}
	if _, err := s.repo.Object(plumbing.AnyObject, plumbing.NewHash(hash)); err != nil {
		if depth != 0 {
			return fmt.Errorf("commit %s not found on the remote", hash)
		}
		if remoteRef != "" && s.shallow() {
			// the ref moved behind the shallow boundary (a force-push to an
			// older commit): start the store over with that commit
			s.logger.Info("ref moved behind the fetched history; fetching it afresh", "ref", remoteRef)
			if err := s.resetStore(); err != nil {
				return err
			}
			// a session serves one fetch: talk to the remote afresh
			fresh, far, err := s.open(ctx, auth)
			if err != nil {
				return err
			}
			defer fresh.Close()
			return s.fetch(ctx, fresh, far, remoteRef, hash, auth)
		}
		return fmt.Errorf("commit %s not found on the remote", hash)
	}
	return nil
}

// fetchPack asks the remote for want (with depth, only that commit),
// telling it which commits the store has (haves), and stores the pack it
// sends. refs/sync/target keeps what was fetched reachable.
func (s *Syncer) fetchPack(ctx context.Context, sess transport.UploadPackSession, ar *packp.AdvRefs, want plumbing.Hash, depth int, haves []plumbing.Hash) (err error) {
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	if ar.Capabilities.Supports(capability.NoProgress) {
		if err := req.Capabilities.Set(capability.NoProgress); err != nil {
			return err
		}
	}
	req.Wants = []plumbing.Hash{want}
	// like git, tell the remote where a shallow store's history ends, so
	// it does not count on objects behind it
	if req.Shallows, err = s.repo.Storer.Shallow(); err != nil {
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
	req.Haves = haves
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, resp.Close()) }()
	if depth > 0 && len(resp.Shallows) > 0 {
		shallows, err := s.repo.Storer.Shallow()
		if err != nil {
			return err
		}
		for _, h := range resp.Shallows {
			if !slices.Contains(shallows, h) {
				shallows = append(shallows, h)
			}
		}
		if err := s.repo.Storer.SetShallow(shallows); err != nil {
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
	if err := packfile.UpdateObjectStorage(s.repo.Storer, pack); err != nil {
		return err
	}
	return s.repo.Storer.SetReference(plumbing.NewHashReference("refs/sync/target", want))
}

// haves are the commits the store's refs point at, which the remote need
// not send again; none means nothing was fetched yet.
func (s *Syncer) haves() ([]plumbing.Hash, error) {
	refs, err := s.repo.References()
	if err != nil {
		return nil, err
	}
	defer refs.Close()
	var out []plumbing.Hash
	err = refs.ForEach(func(r *plumbing.Reference) error {
		if r.Type() == plumbing.HashReference && strings.HasPrefix(r.Name().String(), "refs/sync/") && !slices.Contains(out, r.Hash()) {
			out = append(out, r.Hash())
		}
		return nil
	})
	return out, err
}

// shallow: the store was fetched with a depth.
func (s *Syncer) shallow() bool {
	sh, err := s.repo.Storer.Shallow()
	return err == nil && len(sh) > 0
}

// openStore opens (or creates) the bare object store under CheckoutDir.
// Pack files stay open between reads (a checkout reads thousands of
// objects), up to a bound.
func (s *Syncer) openStore() error {
	dir := filepath.Join(s.opts.CheckoutDir, "repo.git")
	st := filesystem.NewStorageWithOptions(osfs.New(dir), cache.NewObjectLRUDefault(), filesystem.Options{MaxOpenDescriptors: 16})
	repo, err := git.Open(st, nil)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		repo, err = git.Init(st, nil)
	}
	if err != nil {
		return fmt.Errorf("object store %s: %w", dir, err)
	}
	// the store's config is readable by hooks: its remote is the URL
	// without credentials (which Auth.method takes from the URL), and a
	// remote written with them by an earlier version is replaced
	_ = repo.DeleteRemote("origin")
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{Scrub(s.opts.URL)}}); err != nil {
		return fmt.Errorf("remote %s: %w", Scrub(s.opts.URL), err)
	}
	s.repo, s.store = repo, st
	return nil
}

// resetStore empties the object store (checked-out revisions stay).
func (s *Syncer) resetStore() error {
	_ = s.store.Close()
	if err := os.RemoveAll(filepath.Join(s.opts.CheckoutDir, "repo.git")); err != nil {
		return err
	}
	return s.openStore()
}

func orHash(ref, hash string) string {
	if ref != "" {
		return ref
	}
	return hash
}

// verify checks the commit's signature against the trusted keys.
func (s *Syncer) verify(c *object.Commit) error {
	if s.opts.VerifyKeysDir == "" {
		return nil
	}
	entries, err := os.ReadDir(s.opts.VerifyKeysDir)
	if err != nil {
		return fmt.Errorf("trusted keys: %w", err)
	}
	var keys []string
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.opts.VerifyKeysDir, e.Name()))
		if err != nil {
			return fmt.Errorf("trusted keys: %w", err)
		}
		keys = append(keys, string(b))
	}
	if len(keys) == 0 {
		return fmt.Errorf("trusted keys: no key files in %s", s.opts.VerifyKeysDir)
	}
	if strings.TrimSpace(c.PGPSignature) == "" {
		return fmt.Errorf("commit %s (%s) is not signed, and signature verification is on", short(c.Hash.String()), firstLine(c.Message))
	}
	for _, k := range keys {
		if _, err := c.Verify(k); err == nil {
			return nil
		}
	}
	return fmt.Errorf("commit %s (%s) is not signed by a trusted key", short(c.Hash.String()), firstLine(c.Message))
}

// peel follows annotated tags to their commit.
func (s *Syncer) peel(h plumbing.Hash) (*object.Commit, error) {
	for range 10 {
		if tag, err := s.repo.TagObject(h); err == nil {
			h = tag.Target
			continue
		}
		c, err := s.repo.CommitObject(h)
		if err != nil {
			return nil, fmt.Errorf("%s is not a commit: %w", h, err)
		}
		return c, nil
	}
	return nil, fmt.Errorf("%s: tag chain too long", h)
}

// checkout writes a commit's tree into revisions/<sha> (0700), through a
// temporary directory renamed into place, so no reader sees half a tree.
// With a previous revision on disk, unchanged files are hard-linked from it
// and only what changed is written (revisions are never modified in place).
func (s *Syncer) checkout(c *object.Commit, prev *Revision) (string, error) {
	s.cleaning.Wait()
	final := filepath.Join(s.opts.CheckoutDir, "revisions", c.Hash.String())
	if _, err := os.Stat(final); err == nil {
		return final, nil
	}
	tmp, err := os.MkdirTemp(filepath.Join(s.opts.CheckoutDir, "revisions"), ".tmp-")
	if err != nil {
		return "", err
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(tmp)
		}
	}()
	tree, err := c.Tree()
	if err != nil {
		return "", err
	}
	if prev == nil || !s.incremental(tree, prev, tmp) {
		if err := os.RemoveAll(tmp); err != nil {
			return "", err
		}
		if err := os.Mkdir(tmp, 0o700); err != nil {
			return "", err
		}
		made := map[string]bool{}
		err = tree.Files().ForEach(func(f *object.File) error {
			if !s.wanted(f.Name) {
				return nil
			}
			return writeEntry(tmp, f, made)
		})
		if err != nil {
			return "", fmt.Errorf("check out %s: %w", short(c.Hash.String()), err)
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", err
	}
	ok = true
	return final, nil
}

// incremental fills dir from the previous revision. It walks the new tree
// against the previous one: a subtree or file whose hash and mode are
// unchanged is hard-linked from the previous revision on disk without
// reading a git object; only what changed is read and written. It reports
// false when it could not (the previous revision is gone or its commit
// unknown); the caller then writes the whole tree. An error in a changed
// entry (a symlink out of the checkout) also makes it fall back, and the
// full write reports it.
func (s *Syncer) incremental(tree *object.Tree, prev *Revision, dir string) bool {
	prevCommit, err := s.repo.CommitObject(plumbing.NewHash(prev.Commit))
	if err != nil {
		return false
	}
	prevTree, err := prevCommit.Tree()
	if err != nil {
		return false
	}
	if _, err := os.Stat(prev.Dir); err != nil {
		return false
	}
	return s.mergeTree(prevTree, tree, prev.Dir, dir, "") == nil
}

// mergeTree writes tree, the subtree at rel, into the revision at root,
// reusing the previous revision at prevRoot where prevTree has the same
// entry.
func (s *Syncer) mergeTree(prevTree, tree *object.Tree, prevRoot, root, rel string) error {
	old := map[string]object.TreeEntry{}
	if prevTree != nil {
		for _, e := range prevTree.Entries {
			old[e.Name] = e
		}
	}
	for _, e := range tree.Entries {
		name := path.Join(rel, e.Name)
		src, dst := filepath.Join(prevRoot, filepath.FromSlash(name)), filepath.Join(root, filepath.FromSlash(name))
		if o, ok := old[e.Name]; ok && o.Hash == e.Hash && o.Mode == e.Mode {
			if err := linkTree(src, dst); err != nil {
				return err
			}
			continue
		}
		switch e.Mode {
		case filemode.Dir:
			sub, err := tree.Tree(e.Name)
			if err != nil {
				return err
			}
			var prevSub *object.Tree
			if o, ok := old[e.Name]; ok && o.Mode == filemode.Dir {
				if prevSub, err = prevTree.Tree(e.Name); err != nil {
					return err
				}
			}
			if err := s.mergeTree(prevSub, sub, prevRoot, root, name); err != nil {
				return err
			}
		case filemode.Submodule:
		default:
			if !s.wanted(name) {
				continue
			}
			f, err := tree.TreeEntryFile(&e)
			if err != nil {
				return err
			}
			f.Name = name
			if err := writeEntry(root, f, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// linkTree recreates src (a file, symlink or directory of the previous
// revision) at dst with hard links. A missing src is a path the checkout
// leaves out (not under Paths), and is skipped.
func linkTree(src, dst string) error {
	info, err := os.Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		link, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(link, dst)
	case !info.IsDir():
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		return os.Link(src, dst)
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		s, d := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		switch {
		case e.IsDir():
			err = linkTree(s, d)
		case e.Type()&fs.ModeSymlink != 0:
			var link string
			if link, err = os.Readlink(s); err == nil {
				err = os.Symlink(link, d)
			}
		default:
			err = os.Link(s, d)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// wanted: the file is under one of the checked-out subtrees.
func (s *Syncer) wanted(name string) bool {
	if len(s.opts.Paths) == 0 {
		return true
	}
	for _, p := range s.opts.Paths {
		p = strings.Trim(filepath.ToSlash(filepath.Clean(p)), "/")
		if p == "." || p == "" || name == p || strings.HasPrefix(name, p+"/") {
			return true
		}
	}
	return false
}

// writeEntry writes one file of a tree under root. made caches the
// directories already created (nil: none), sparing a full checkout a
// stat per file.
func writeEntry(root string, f *object.File, made map[string]bool) error {
	target := filepath.Join(root, filepath.FromSlash(f.Name))
	if !within(root, target) {
		return fmt.Errorf("%s: path leads out of the checkout", f.Name)
	}
	if parent := filepath.Dir(target); !made[parent] {
		if err := os.MkdirAll(parent, 0o700); err != nil {
			return err
		}
		if made != nil {
			made[parent] = true
		}
	}
	switch f.Mode {
	case filemode.Symlink:
		link, err := f.Contents()
		if err != nil {
			return err
		}
		resolved := link
		if !filepath.IsAbs(link) {
			resolved = filepath.Join(filepath.Dir(target), link)
		}
		if filepath.IsAbs(link) || !within(root, resolved) {
			return fmt.Errorf("%s: symlink to %q leads out of the checkout", f.Name, link)
		}
		return os.Symlink(link, target)
	case filemode.Submodule:
		return nil
	}
	mode := os.FileMode(0o644)
	if f.Mode == filemode.Executable {
		mode = 0o755
	}
	r, err := f.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, filepath.Clean(p))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// publish points the current link at dir with one rename.
func (s *Syncer) publish(dir string) error {
	rel, err := filepath.Rel(s.opts.CheckoutDir, dir)
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.opts.CheckoutDir, ".current.tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, s.CurrentDir())
}

// cleanup removes the revisions nothing needs: it keeps the current and
// the previous published one (a restart falls back to it when the current
// one is refused) and those Options.InUse names (the running model's).
func (s *Syncer) cleanup() {
	s.mu.Lock()
	keep := map[string]bool{}
	for i, r := range s.status.History {
		if i < 2 {
			keep[r.Commit] = true
		}
	}
	s.mu.Unlock()
	if s.opts.InUse != nil {
		for _, c := range s.opts.InUse() {
			keep[c] = true
		}
	}
	dir := filepath.Join(s.opts.CheckoutDir, "revisions")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !keep[e.Name()] {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// Run syncs every interval (and at once on Trigger) until ctx is done,
// calling onPublish for each new revision. Failures back off exponentially
// up to the interval; the current revision keeps running meanwhile. A
// panic in a sync is logged and counts as a failure.
func (s *Syncer) Run(ctx context.Context, interval time.Duration, onPublish func(*Revision)) {
	defer s.cleaning.Wait()
	failures := 0
	for {
		wait := interval
		if rev, changed, err := s.safeSync(ctx); err != nil {
			failures++
			wait = min(interval, time.Second<<min(failures, 6))
			s.logger.Error("sync failed; the current revision keeps running", "err", err, "retry_in", wait)
		} else {
			failures = 0
			if changed {
				onPublish(rev)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.trigger:
		case <-s.opts.After(wait):
		}
	}
}

func (s *Syncer) safeSync(ctx context.Context) (rev *Revision, changed bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sync panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return s.Sync(ctx)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
