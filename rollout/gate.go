package rollout

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/addonops/addon-operator/changewindow"
	"github.com/addonops/addon-operator/commitstatus"
	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/ring"
)

// Holders of a revision (gitsync.Hold.By) this package reports under.
const (
	HeldByRing   = "ring"
	HeldByWindow = "window"
)

// Lister reads a commit's statuses: commitstatus.ReadCache, so that the
// gates of one poll share one read per commit.
type Lister interface {
	Statuses(ctx context.Context, commit string) ([]commitstatus.Posted, error)
}

var _ Lister = (*commitstatus.ReadCache)(nil)

// Running is this cluster's running revision as the gate needs it.
type Running struct {
	Commit string
	// Broken is the running revision's own state when it is failed or
	// degraded ("" otherwise): rings and windows then hold no newer
	// commit.
	Broken commitstatus.State
}

// ApplyNow is the commit `source apply-now` lets past rings and windows.
type ApplyNow struct {
	// Commit is a full SHA or a prefix of 7 hex digits or more ("": none).
	Commit string    `json:"commit"`
	By     string    `json:"by,omitempty"`
	At     time.Time `json:"at,omitzero"`
	Reason string    `json:"reason,omitempty"`
}

// Matches says whether a names commit (a prefix of 7 or more hex digits).
func (a ApplyNow) Matches(commit string) bool {
	c := strings.ToLower(strings.TrimSpace(a.Commit))
	return prefixRe.MatchString(c) && strings.HasPrefix(commit, c)
}

var prefixRe = regexp.MustCompile(`^[0-9a-f]{7,40}$`)

// ValidApplyNow checks an apply-now commit as the CLI takes it.
func ValidApplyNow(commit string) error {
	if !prefixRe.MatchString(commit) {
		return fmt.Errorf("%q: want a commit SHA, full or its first 7 hex digits or more", commit)
	}
	return nil
}

// Options configure a Gate.
type Options struct {
	// Lister reads the forge's statuses (nil: none can be read; Parse
	// refuses a ring after 0 then).
	Lister Lister
	// Running is this cluster's running revision now.
	Running func() Running
	// History is the revisions this cluster published, newest first
	// (gitsync.Status.History), for telling a rollback.
	History func() []gitsync.Revision
	// ApplyNow is the apply-now in force (nil: none).
	ApplyNow func() ApplyNow
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Timeout bounds a forge read when the context has no deadline
	// (default 30s).
	Timeout time.Duration
}

// Gate decides, for each candidate revision, what holds it. The policy in
// force is the one Learn recorded for the running commit.
type Gate struct {
	opts Options

	mu       sync.Mutex
	policies map[string]*Policy
	order    []string
	last     *Decision
}

// maxPolicies bounds the policies remembered: the running revision's and
// the candidates checked since, seldom more than a few.
const maxPolicies = 32

// New makes a Gate.
func New(o Options) *Gate {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Running == nil {
		o.Running = func() Running { return Running{} }
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	return &Gate{opts: o, policies: map[string]*Policy{}}
}

// Learn records the policy a revision's config sets (at check time).
// Past maxPolicies the oldest is forgotten, never the running
// revision's: without it the gate would hold nothing.
func (g *Gate) Learn(commit string, p *Policy) {
	keep := g.opts.Running().Commit
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.policies[commit]; !ok {
		g.order = append(g.order, commit)
		if len(g.order) > maxPolicies {
			i := 0
			if g.order[0] == keep {
				i = 1
			}
			delete(g.policies, g.order[i])
			g.order = slices.Delete(g.order, i, i+1)
		}
	}
	g.policies[commit] = p
}

// Running is this cluster's running revision (Options.Running).
func (g *Gate) Running() Running { return g.opts.Running() }

// Policy is the policy commit's config set (nil: not known, or none).
func (g *Gate) Policy(commit string) *Policy {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.policies[commit]
}

// Decision is the gate's answer for one candidate.
type Decision struct {
	Commit string    `json:"commit"`
	At     time.Time `json:"at"`
	// Holds are what keeps the commit out (none: it applies).
	Holds []gitsync.Hold `json:"holds,omitempty"`
	// Reason is the one line posted on a held commit (its first hold's).
	Reason string `json:"reason,omitempty"`
	// Note says why a ring or window did not hold it ("": they did not
	// have to): apply-now, a broken cluster, a rollback.
	Note string `json:"note,omitempty"`
	// Ring and Window are the parts' answers (nil: not asked).
	Ring   *ring.Decision         `json:"ring,omitempty"`
	Window *changewindow.Decision `json:"window,omitempty"`
	// Broken is the running revision's failed or degraded state.
	Broken commitstatus.State `json:"broken,omitempty"`
	// Rollback says why the commit is a rollback ("": it is not).
	Rollback string `json:"rollback,omitempty"`
	// ApplyNow is the apply-now that let it through (nil: none did).
	ApplyNow *ApplyNow `json:"applyNow,omitempty"`
}

// Held says whether the decision holds the commit.
func (d *Decision) Held() bool { return d != nil && len(d.Holds) > 0 }

// Last is the gate's last decision (nil: none yet).
func (g *Gate) Last() *Decision {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last == nil {
		return nil
	}
	d := *g.last
	return &d
}

// Decide asks the policy in force about rev and remembers the answer.
func (g *Gate) Decide(ctx context.Context, rev gitsync.Revision) Decision {
	now := g.opts.Now()
	run := g.opts.Running()
	d := Decision{Commit: rev.Commit, At: now.UTC(), Broken: run.Broken}
	if run.Broken != commitstatus.Failed && run.Broken != commitstatus.Degraded {
		d.Broken = ""
	}
	p := g.Policy(run.Commit)
	if p == nil {
		p = &Policy{}
	}
	var an *ApplyNow
	if g.opts.ApplyNow != nil {
		if a := g.opts.ApplyNow(); a.Matches(rev.Commit) {
			an = &a
		}
	}
	d.Rollback = rollback(rev, g.history())
	var notes []string
	if p.Ring != nil && p.Ring.Ring > 0 {
		rd := g.ring(ctx, p.Ring, rev.Commit, now)
		d.Ring = &rd
		if rd.Verdict != ring.Apply {
			switch {
			case an != nil:
				notes = append(notes, rd.Reason+" (applied by apply-now)")
			case d.Broken != "":
				notes = append(notes, fmt.Sprintf("applied despite the ring: the running revision is %s", d.Broken))
			case d.Rollback != "" && !p.HoldRollbacks:
				notes = append(notes, "applied despite the ring: a rollback ("+d.Rollback+"); rollout.holdRollbacks is off")
			default:
				d.Holds = append(d.Holds, gitsync.Hold{By: HeldByRing, Reason: rd.Reason})
			}
		}
	}
	if p.Windows != nil {
		wd := p.Windows.Decide(now)
		d.Window = &wd
		if !wd.Open {
			switch {
			case an != nil:
				notes = append(notes, wd.Reason+" (applied by apply-now)")
			case d.Broken != "":
				notes = append(notes, fmt.Sprintf("applied despite the window: the running revision is %s", d.Broken))
			default:
				d.Holds = append(d.Holds, gitsync.Hold{By: HeldByWindow, Reason: wd.Reason})
			}
		}
	}
	if len(d.Holds) > 0 {
		d.Reason = d.Holds[0].Reason
	} else {
		d.ApplyNow = an
		if len(notes) > 0 {
			d.Note = strings.Join(notes, "; ")
		}
	}
	g.mu.Lock()
	g.last = &d
	g.mu.Unlock()
	return d
}

// ring reads the commit's statuses (through the cache: one read per poll)
// and asks the ring policy; a failed read holds, with its error.
func (g *Gate) ring(ctx context.Context, p *ring.Policy, commit string, now time.Time) ring.Decision {
	in := ring.Input{Now: now}
	if g.opts.Lister == nil {
		in.ReadErr = fmt.Errorf("no forge to read the statuses of ring %d from", p.Ring-1)
		return p.Decide(in)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.opts.Timeout)
		defer cancel()
	}
	in.Statuses, in.ReadErr = g.opts.Lister.Statuses(ctx, commit)
	return p.Decide(in)
}

func (g *Gate) history() []gitsync.Revision {
	if g.opts.History == nil {
		return nil
	}
	return g.opts.History()
}

// rollback says why rev is a rollback ("": it is not): its ref pins a
// commit (`source set-ref <sha>`), or it carries the same checked-out
// content as a revision published before, other than the current one
// (history[0]).
func rollback(rev gitsync.Revision, history []gitsync.Revision) string {
	if rev.RemoteRef == "" && shaRe.MatchString(rev.Ref) {
		return "the ref pins commit " + short(rev.Ref)
	}
	if rev.Tree == "" || len(history) == 0 || history[0].Tree == rev.Tree {
		return ""
	}
	if i := slices.IndexFunc(history[1:], func(h gitsync.Revision) bool { return h.Tree == rev.Tree }); i >= 0 {
		return "the same content as " + short(history[i+1].Commit) + ", published before"
	}
	return ""
}

var shaRe = regexp.MustCompile(`^[0-9a-f]{40}$`)

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
