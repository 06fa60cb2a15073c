package gitsync

import (
	"context"
	"errors"
	"fmt"
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

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Options configure a Syncer; T is what Validate makes of a revision.
type Options[T any] struct {
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
	// RootAlias is an absolute prefix (such as /deckhouse) that symlink
	// targets may start with to name the repository's root, as trees built
	// for an image do; such a link must still lead inside the checkout
	// (links.go). It is written as git holds it: the loader maps it.
	RootAlias string
	// MaxFileSize bounds a file of the checked-out paths, and any blob a
	// fetch stores: a bigger one is left out of the pack before the store
	// takes it, and a revision that needs it is refused, naming it. Other
	// objects (trees, commits) are bounded by the larger of it and
	// DefaultMaxFileSize. 0: DefaultMaxFileSize; negative: no limit.
	MaxFileSize int64
	// MaxFiles bounds the files, symlinks and directories of a revision's
	// checked-out paths. 0: DefaultMaxFiles; negative: no limit.
	MaxFiles int
	// MaxCheckoutSize bounds the summed size of a revision's files.
	// 0: DefaultMaxCheckoutSize; negative: no limit.
	MaxCheckoutSize int64
	// Gate, if set, may hold a new revision out once it is validated
	// (docs/operator.md, "Suspend, resume and sync"); it is asked only
	// while a revision is current, so the first revision of an empty
	// checkout is never held: the caller pins that one (SetRef) itself.
	Gate Gate
	// Validate checks a checked-out revision before it is published, and
	// a revision restored from disk before it is used again; what it
	// returns rides on the revision (Checked.Model), typed, unread by the
	// syncer. A refused revision is never current.
	Validate func(ctx context.Context, dir string) (T, error)
	// Refused is told of a fetched revision that Validate refused, with
	// Validate's error, on each sync that refuses it: whoever follows the
	// commit learns that it will not run (the commit status). Not for a
	// revision restored from disk, nor when ctx ended.
	Refused func(rev Revision, err error)
	// InUse lists commits whose checkouts must stay on disk (the running
	// model's files); old revisions are removed otherwise.
	InUse  func() []string
	Logger *slog.Logger
	Now    func() time.Time
	// After is the clock of the poll loop (default time.After).
	After func(time.Duration) <-chan time.Time
}

// Revision is one tree the operator can run: a checked-out commit, or
// (Commit "") a working copy. The operator records Commit on releases and
// in /status.
type Revision struct {
	Commit string `json:"commit"`
	Ref    string `json:"ref"`
	// RemoteRef is the full ref Ref resolved to (refs/tags/v1); empty for
	// a commit SHA.
	RemoteRef string    `json:"remoteRef,omitempty"`
	Subject   string    `json:"subject"`
	Author    string    `json:"author"`
	Time      time.Time `json:"time"`
	AppliedAt time.Time `json:"appliedAt,omitzero"`
	// Tree is a digest of the checked-out content (the paths, modes and
	// blobs within Paths): two commits with the same Tree run the same
	// files, which is how the fleet gate tells a rollback.
	Tree string `json:"tree,omitempty"`
	// Dir is the revision's checkout ("" for a working copy).
	Dir string `json:"-"`
}

// Checked is a published revision and what Options.Validate returned for
// its Dir (T's zero value without Validate): the operator's loaded model,
// which it runs without reading the files again.
type Checked[T any] struct {
	Revision
	Model T
}

// Status is what `source status` and /status show.
type Status struct {
	URL        string    `json:"url"`
	DesiredRef string    `json:"desiredRef"`
	Current    *Revision `json:"current,omitempty"`
	LastSync   time.Time `json:"lastSync,omitzero"`
	LastError  string    `json:"lastError,omitempty"`
	// Pending is the newest revision fetched and checked but held, and
	// Held what holds it (Options.Gate).
	Pending *Revision  `json:"pending,omitempty"`
	Held    []Hold     `json:"held,omitempty"`
	History []Revision `json:"history"`
}

const (
	historySize = 10
	currentLink = "current"
	historyFile = "history.json"
)

// Syncer keeps a checkout of one ref of a remote repository: the sync
// loop (polls, triggers, live ref changes) and what a sync decides
// (whether the ref moved, which full ref it may resolve to, publishing).
// It fetches through a fetcher, reads commits from the object store,
// writes revisions through a checkoutWriter and records them in history.
type Syncer[T any] struct {
	opts      Options[T]
	logger    *slog.Logger
	remote    fetching
	commits   commitReader
	revisions revisionWriter
	history   historyKeeper

	mu      sync.Mutex
	ref     string
	current *Checked[T]
	// resolved is the remote hash the current revision came from (a tag
	// object for an annotated tag), compared on every poll.
	resolved string
	// fullRef is the full ref the desired ref, a short name, resolved to
	// first: a poll that resolves it to another is refused until the ref
	// is set again (docs/git.md, "Refs"). A restart takes it from the
	// newest published revision of the same ref.
	fullRef string
	status  Status
	trigger chan struct{}
	// gates keeps the revision Options.Gate holds
	gates *gatekeeper[T]
	// syncs counts the syncs Run started and ended; ended is closed and
	// replaced at each end (SyncNow waits on it)
	syncs syncCount
}

// fetching is what a sync asks of the fetcher: a session listing the
// remote's refs, a commit's objects, and starting the store over.
type fetching interface {
	open(ctx context.Context, auth transport.AuthMethod) (transport.UploadPackSession, *packp.AdvRefs, error)
	fetch(ctx context.Context, sess transport.UploadPackSession, ar *packp.AdvRefs, remoteRef, hash string, auth transport.AuthMethod) error
	fill(ctx context.Context, c *object.Commit, sess transport.UploadPackSession, ar *packp.AdvRefs, auth transport.AuthMethod) error
	reset() error
	published()
}

// commitReader reads the commits a sync checks out from the object store.
type commitReader interface {
	peel(h plumbing.Hash) (*object.Commit, error)
	commit(h plumbing.Hash) (*object.Commit, error)
}

// revisionWriter writes a commit's revision and removes old ones.
type revisionWriter interface {
	checkout(c *object.Commit, prev *Revision) (dir, tree string, err error)
	prune(keep func() map[string]bool)
	wait()
}

// historyKeeper records the published revisions on disk.
type historyKeeper interface {
	currentDir() string
	publish(dir string) error
	read() []Revision
	write(hist []Revision) error
}

var shaRe = regexp.MustCompile(`^[0-9a-f]{40}$`)

// ErrCommitNotFound: the remote answered, and has no such commit (a
// pinned SHA force-pushed away or pruned), unlike a remote that cannot be
// reached, which may have it again later.
var ErrCommitNotFound = errors.New("not found on the remote")

// New opens (or creates) the object store under CheckoutDir.
func New[T any](opts Options[T]) (*Syncer[T], error) {
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
	for _, d := range []string{"revisions", "manifests"} {
		if err := os.MkdirAll(filepath.Join(opts.CheckoutDir, d), 0o700); err != nil {
			return nil, err
		}
	}
	// packs a sync received when the process ended
	if left, err := filepath.Glob(filepath.Join(opts.CheckoutDir, ".pack-*")); err == nil {
		for _, p := range left {
			_ = os.Remove(p)
		}
	}
	logger := opts.Logger.With("source", Scrub(opts.URL))
	store, err := openStore(filepath.Join(opts.CheckoutDir, "repo.git"), opts.URL, logger)
	if err != nil {
		return nil, err
	}
	lim, paths := limitsOf(opts), cleanPaths(opts.Paths)
	left := &dropped{lim: lim}
	pl := &planner{objects: store, why: left, limits: lim, paths: paths, alias: path.Clean(opts.RootAlias)}
	if opts.RootAlias == "" {
		pl.alias = ""
	}
	s := &Syncer[T]{
		opts: opts, logger: logger, ref: opts.Ref, trigger: make(chan struct{}, 1),
		gates: &gatekeeper[T]{gate: opts.Gate, now: opts.Now},
		remote: &fetcher{url: opts.URL, dir: opts.CheckoutDir, logger: logger, limits: lim, paths: paths,
			store: store, plan: pl, dropped: left},
		commits:   store,
		revisions: &checkoutWriter{dir: opts.CheckoutDir, logger: logger, objects: store, why: left, plan: pl},
		history:   history{dir: opts.CheckoutDir},
	}
	s.status = Status{URL: Scrub(opts.URL), DesiredRef: opts.Ref, History: []Revision{}}
	if hist := s.history.read(); len(hist) > 0 && hist[0].Ref == opts.Ref && pinnable(opts.Ref) {
		s.fullRef = hist[0].RemoteRef
	}
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
	for _, d := range []string{"revisions", "manifests"} {
		if err := os.RemoveAll(filepath.Join(checkoutDir, d)); err != nil {
			return err
		}
	}
	if err := os.Remove(filepath.Join(checkoutDir, currentLink)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.WriteFile(marker, []byte(want), 0o600)
}

// SetRef changes the desired ref and triggers a sync.
func (s *Syncer[T]) SetRef(ref string) {
	s.mu.Lock()
	changed := s.ref != ref
	s.ref = ref
	s.status.DesiredRef = ref
	if changed {
		s.resolved, s.fullRef = "", ""
		s.gates.release()
	}
	s.mu.Unlock()
	s.Trigger()
}

// Trigger asks the poll loop to sync now.
func (s *Syncer[T]) Trigger() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

// Status reports the source.
func (s *Syncer[T]) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	st.History = slices.Clone(s.status.History)
	st.Pending, st.Held = s.gates.status()
	if s.current != nil {
		c := s.current.Revision
		st.Current = &c
	}
	return st
}

// Current is the published revision (nil before the first sync).
func (s *Syncer[T]) Current() *Revision {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == nil {
		return nil
	}
	c := s.current.Revision
	return &c
}

// CurrentDir is the stable path of the published revision (a symlink).
func (s *Syncer[T]) CurrentDir() string { return s.history.currentDir() }

// Run syncs every interval (and at once on Trigger) until ctx is done,
// calling onPublish for each new revision and its model. Failures back off exponentially
// up to the interval; the current revision keeps running meanwhile. A
// panic in a sync is logged and counts as a failure.
func (s *Syncer[T]) Run(ctx context.Context, interval time.Duration, onPublish func(*Checked[T])) {
	defer s.revisions.wait()
	failures := 0
	for {
		wait := interval
		n := s.syncs.begin()
		rev, changed, err := s.safeSync(ctx)
		s.syncs.end(n, err)
		if err != nil {
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

func (s *Syncer[T]) safeSync(ctx context.Context) (rev *Checked[T], changed bool, err error) {
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
