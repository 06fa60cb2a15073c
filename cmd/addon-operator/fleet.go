package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/addonops/addon-operator/commitstatus"
	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/rollout"
)

// A fleet's rollout (docs/operator.md, "Fleets"): rings and change
// windows from the running revision's config in git, and `source
// apply-now`, which lives in the source ConfigMap beside suspend:
//
//	data:
//	  applyNow: <sha or prefix>  # that commit passes rings and windows
//	  applyNowBy, applyNowAt, applyNowReason
//	  heldAtRevision: <sha>      # the operator: the commit it runs while a newer one is held
const (
	sourceApplyNowKey       = "applyNow"
	sourceApplyNowByKey     = "applyNowBy"
	sourceApplyNowAtKey     = "applyNowAt"
	sourceApplyNowReasonKey = "applyNowReason"
	sourceHeldAtRevKey      = "heldAtRevision"
)

// applyNowIn reads the apply-now of the source ConfigMap's data.
func applyNowIn(data map[string]string) rollout.ApplyNow {
	a := rollout.ApplyNow{Commit: data[sourceApplyNowKey], By: data[sourceApplyNowByKey], Reason: data[sourceApplyNowReasonKey]}
	a.At, _ = time.Parse(time.RFC3339, data[sourceApplyNowAtKey])
	return a
}

// fleet is the operator's side of the rollout gate: it asks the gate of
// each revision suspend lets by, posts a held commit's reason, records
// the ApplyNow Event, and keeps heldAtRevision.
type fleet struct {
	ctx    context.Context
	gate   *rollout.Gate
	forge  bool // the forge's statuses can be read
	logger *slog.Logger
	now    func() time.Time
	// report posts a held commit's status (nil: commit status off);
	// acting says whether this replica reports and records
	report func(commitstatus.Report)
	acting func() bool
	// event records an Event on the source ConfigMap (nil: none)
	event func(ctx context.Context, reason, msg string)
	// notifier's ring follows the running revision's config (nil: off)
	setRing func(*int)
	// tap has the running revision's state
	tap *revisionTap

	mu       sync.Mutex
	data     map[string]string // the source ConfigMap's, last seen
	seen     bool              // data came (update) at least once
	recorded string            // the apply-now Event recorded (commit@at)
	logged   string            // the last decision logged: a hold is asked again at each poll
}

// logOnce says whether what was not the last thing logged.
func (f *fleet) logOnce(what string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.logged == what {
		return false
	}
	f.logged = what
	return true
}

// update takes the source ConfigMap's data.
func (f *fleet) update(data map[string]string) {
	f.mu.Lock()
	f.data, f.seen = data, true
	f.mu.Unlock()
}

func (f *fleet) applyNow() rollout.ApplyNow {
	f.mu.Lock()
	defer f.mu.Unlock()
	return applyNowIn(f.data)
}

// learn parses the rollout sections of a checked revision's config in
// git and remembers them by commit (the revision's directory is
// revisions/<sha>): a bad section refuses the revision.
func (f *fleet) learn(dir string, model *loader.Model) error {
	var cfg rollout.Config
	files := ""
	if model.Config != nil {
		cfg, files = model.Config, strings.Join(model.Config.OperatorFiles, ", ")
	}
	p, err := rollout.Parse(cfg, files, f.forge, f.now())
	if err != nil {
		return err
	}
	f.gate.Learn(filepath.Base(dir), p)
	return nil
}

// adopting is told of the revision about to run: the commit statuses'
// ring follows its config.
func (f *fleet) adopting(commit string) {
	if f.setRing == nil {
		return
	}
	var r *int
	if p := f.gate.Policy(commit); p != nil && p.Ring != nil {
		r = &p.Ring.Ring
	}
	f.setRing(r)
}

// hold is the rollout's gitsync.Gate.
func (f *fleet) hold(rev gitsync.Revision) []gitsync.Hold {
	d := f.gate.Decide(f.ctx, rev)
	acting := f.acting()
	switch {
	case d.Held():
		if f.report != nil && acting {
			f.report(commitstatus.Report{Commit: rev.Commit, State: commitstatus.Held, Reason: d.Reason})
		}
		if f.logOnce(rev.Commit + "\x00" + d.Reason) {
			f.logger.Info("revision held", "commit", rev.Commit, "reason", d.Reason)
		}
	case d.ApplyNow != nil:
		f.applyNowEvent(rev.Commit, d)
	case d.Note != "" && f.logOnce(rev.Commit+"\x00"+d.Note):
		f.logger.Warn("revision applied despite the rollout", "commit", rev.Commit, "note", d.Note)
	}
	return d.Holds
}

// applyNowEvent records, once, that apply-now let a commit through.
func (f *fleet) applyNowEvent(commit string, d rollout.Decision) {
	a := d.ApplyNow
	id := commit + "@" + a.At.String()
	f.mu.Lock()
	done := f.recorded == id
	f.recorded = id
	f.mu.Unlock()
	if done || !f.acting() || f.event == nil {
		return
	}
	msg := "apply-now: commit " + commit
	if a.By != "" {
		msg += " set by " + a.By
	}
	if !a.At.IsZero() {
		msg += " at " + a.At.UTC().Format(time.RFC3339)
	}
	if a.Reason != "" {
		msg += " (" + a.Reason + ")"
	}
	if d.Note != "" {
		msg += " applies past: " + d.Note
	} else {
		msg += " applies; nothing held it"
	}
	f.logger.Info(msg)
	f.event(f.ctx, "ApplyNow", msg)
}

// configHeld is lifecycle's ConfigHold predicate: a ConfigMap or values
// Secret edit is held while the running policy's windows are closed,
// unless the running revision is failed or degraded (a fix may be an
// edit). nil-safe: the fleet is made after the operator.
func (f *fleet) configHeld() (string, bool) {
	if f == nil {
		return "", false
	}
	running := f.gate.Running()
	p := f.gate.Policy(running.Commit)
	if p == nil || p.Windows == nil || running.Broken == commitstatus.Failed || running.Broken == commitstatus.Degraded {
		return "", false
	}
	if d := p.Windows.Decide(f.now()); !d.Open {
		return d.Reason, true
	}
	return "", false
}

// rolloutView is /status's source.rollout.
type rolloutView struct {
	Ring   *int   `json:"ring,omitempty"`
	Policy string `json:"policy"`
	// Last is the gate's last decision, on the newest revision it was asked of.
	Last     *rollout.Decision  `json:"last,omitempty"`
	Broken   commitstatus.State `json:"broken,omitempty"`
	Rollback string             `json:"rollback,omitempty"`
}

// windowsView is /status's source.windows: now, under the running policy.
type windowsView struct {
	Open   bool      `json:"open"`
	HeldBy string    `json:"heldBy,omitempty"`
	Until  time.Time `json:"until,omitzero"`
	Reason string    `json:"reason,omitempty"`
}

// views are /status's source.rollout and source.windows (nil: no policy).
func (f *fleet) views(running string) (*rolloutView, *windowsView) {
	broken := f.tap.broken(running)
	p := f.gate.Policy(running)
	last := f.gate.Last()
	if p == nil || (p.Ring == nil && p.Windows == nil) {
		if last == nil {
			return nil, nil
		}
		p = &rollout.Policy{}
	}
	rv := &rolloutView{Policy: p.Summary(), Last: last, Broken: broken}
	if p.Ring != nil {
		r := p.Ring.Ring
		rv.Ring = &r
	}
	if last != nil {
		rv.Rollback = last.Rollback
	}
	if p.Windows == nil {
		return rv, nil
	}
	wd := p.Windows.Decide(f.now())
	return rv, &windowsView{Open: wd.Open, HeldBy: wd.HeldBy, Until: wd.Until, Reason: wd.Reason}
}

// recordHeldAt keeps heldAtRevision: the running commit while a newer one
// is held, removed once nothing is held, so that a pod that starts with
// an empty checkout meanwhile starts on it, not on the ref's newest
// (docs/operator.md, "Fleets").
func (s *startup) recordHeldAt(held bool) {
	if s.fleet == nil || !acting(s.leader) {
		return
	}
	var current string
	if rev := s.src.syncer.Current(); rev != nil {
		current = rev.Commit
	}
	s.writeHeldAt(current, held)
}

// writeHeldAt sets heldAtRevision to current while held, removes it
// otherwise. Before the source ConfigMap's watch delivered its data (the
// first poll after a start may come first) it is read, so that a pin left
// by an earlier run is removed all the same.
func (s *startup) writeHeldAt(current string, held bool) {
	want := ""
	if held {
		want = current
	}
	if held && current == "" {
		return
	}
	s.fleet.mu.Lock()
	have, seen := s.fleet.data[sourceHeldAtRevKey], s.fleet.seen
	s.fleet.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.fleet.ctx, 30*time.Second)
	defer cancel()
	if !seen {
		data, err := s.sourceCM.Get(ctx)
		if err != nil {
			s.logger.Warn("read the held-at revision", "err", err)
			return
		}
		have = data[sourceHeldAtRevKey]
	}
	if have == want {
		return
	}
	data, _, err := s.sourceCM.Update(ctx, func(d map[string]string) (map[string]string, error) {
		setOrDelete(d, sourceHeldAtRevKey, want)
		return d, nil
	})
	if err != nil {
		s.logger.Warn("record the held-at revision", "err", err)
		return
	}
	s.fleet.update(data)
}

// gate is the syncer's gitsync.Gate: suspend first (a suspension holds
// every revision, and asks the forge nothing), then the rollout.
func (s *startup) gate(rev gitsync.Revision) []gitsync.Hold {
	holds := s.control.gate(rev)
	if len(holds) == 0 && s.fleet != nil {
		holds = s.fleet.hold(rev)
	}
	s.recordHeldAt(len(holds) > 0)
	return holds
}

// revisionTap keeps the last state reported of each commit's revision
// (not its modules'), between the health merger and the commit status:
// whether the running revision is failed or degraded.
type revisionTap struct {
	next commitstatus.Reporter // nil: commit status off

	mu     sync.Mutex
	states map[string]commitstatus.State
	order  []string
}

var _ commitstatus.Reporter = (*revisionTap)(nil)

func newRevisionTap(next commitstatus.Reporter) *revisionTap {
	return &revisionTap{next: next, states: map[string]commitstatus.State{}}
}

func (t *revisionTap) Report(r commitstatus.Report) {
	if r.Module == "" && r.Commit != "" && r.State != commitstatus.Held {
		t.mu.Lock()
		if _, ok := t.states[r.Commit]; !ok {
			t.order = append(t.order, r.Commit)
			if len(t.order) > 16 {
				delete(t.states, t.order[0])
				t.order = t.order[1:]
			}
		}
		t.states[r.Commit] = r.State
		t.mu.Unlock()
	}
	if t.next != nil {
		t.next.Report(r)
	}
}

// broken is commit's failed or degraded state ("": neither).
func (t *revisionTap) broken(commit string) commitstatus.State {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.states[commit]; st == commitstatus.Failed || st == commitstatus.Degraded {
		return st
	}
	return ""
}

// newFleet wires the rollout gate; lister is nil when the forge cannot be
// read (commit status off or a webhook).
func (s *startup) newFleet(ctx context.Context, lister commitstatus.Lister, ttl time.Duration, tap *revisionTap) *fleet {
	f := &fleet{ctx: ctx, tap: tap, logger: s.logger.With("component", "rollout"), now: time.Now, acting: func() bool { return acting(s.leader) }}
	opts := rollout.Options{
		Running: func() rollout.Running {
			rev := s.src.syncer.Current()
			if rev == nil {
				return rollout.Running{}
			}
			return rollout.Running{Commit: rev.Commit, Broken: tap.broken(rev.Commit)}
		},
		History:  func() []gitsync.Revision { return s.src.syncer.Status().History },
		ApplyNow: f.applyNow,
	}
	if lister != nil {
		// one read per commit per poll, whoever asks (docs/operator.md, "Fleets")
		opts.Lister = commitstatus.NewReadCache(lister, commitstatus.ReadCacheOptions{TTL: ttl})
		f.forge = true
	}
	f.gate = rollout.New(opts)
	f.event = func(ctx context.Context, reason, msg string) {
		if err := s.sourceCM.Event(ctx, "Normal", reason, msg); err != nil {
			s.logger.Warn("could not record an Event", "reason", reason, "err", err)
		}
	}
	return f
}

// maxHeldAtTries bounds the syncs tried for heldAtRevision when the remote
// says the commit is not there: unlike a suspension, nobody may be there
// to lift it (a pruned or force-pushed commit). A remote that cannot be
// reached counts for nothing: the ref's newest, which the first sync does
// not gate, would then be the held commit itself (docs/operator.md,
// "Fleets").
const maxHeldAtTries = 3

// stillPinned is asked after each failed sync of the start pin, with its
// error: go on with the pin? While suspended, yes; for heldAtRevision,
// while it is recorded, until the remote said maxHeldAtTries times that
// the commit is not there.
func (s *startup) stillPinned(ctx context.Context, err error) bool {
	if !s.heldAtPin {
		return s.stillSuspended(ctx)
	}
	if errors.Is(err, gitsync.ErrCommitNotFound) {
		s.heldAtTries++
		if s.heldAtTries >= maxHeldAtTries {
			return false
		}
	}
	data, err := s.sourceCM.Get(ctx)
	return err != nil || pinIn(data, sourceHeldAtRevKey) != ""
}

// showRollout prints `source status`'s rollout and windows.
func showRollout(out io.Writer, s *sourceView) {
	if r := s.Rollout; r != nil {
		fmt.Fprintf(out, "rollout:      %s\n", r.Policy)
		if r.Broken != "" {
			fmt.Fprintf(out, "  broken:     the running revision is %s: rings and windows hold no newer commit\n", r.Broken)
		}
		if d := r.Last; d != nil {
			line := d.Commit[:min(12, len(d.Commit))] + " at " + d.At.Format(time.RFC3339) + ": "
			switch {
			case d.Held():
				line += "held: " + d.Reason
			case d.Note != "":
				line += "applies: " + d.Note
			default:
				line += "applies"
			}
			fmt.Fprintf(out, "  last:       %s\n", line)
		}
		if r.Rollback != "" {
			fmt.Fprintf(out, "  rollback:   %s\n", r.Rollback)
		}
	}
	if w := s.Windows; w != nil {
		if w.Open {
			fmt.Fprintln(out, "windows:      open: changes apply")
		} else {
			fmt.Fprintf(out, "windows:      closed: %s\n", w.Reason)
		}
	}
}
