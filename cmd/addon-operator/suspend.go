package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/addonops/addon-operator/commitstatus"
	"github.com/addonops/addon-operator/gitsync"
	"github.com/addonops/addon-operator/kube"
)

// Suspend, resume and sync now live in the source ConfigMap, beside ref
// (docs/operator.md, "Suspend, resume and sync"), so that they survive a
// restart and kubectl alone can set them:
//
//	data:
//	  suspended: "true"          # new revisions are held, drift is not corrected
//	  suspendReason: …           # shown on /status, the Event and the commit
//	  suspendedAt: <RFC 3339>    # since when (absent: when the operator saw it)
//	  suspendedBy: …             # who (the CLI writes the API server's user name)
//	  suspendedRevision: <sha>   # the operator: the commit it ran when suspended
//	  resumedAt, resumedBy       # the last resume, for its Event
//	  syncRequested: <token>     # any new value: fetch now, as the webhook does
//	  syncAnswered: <token>      # the operator: that request's sync ended
//	  syncResult: …              # the operator: its outcome in one line
const (
	sourceSuspendedKey     = "suspended"
	sourceSuspendReasonKey = "suspendReason"
	sourceSuspendedAtKey   = "suspendedAt"
	sourceSuspendedByKey   = "suspendedBy"
	sourceSuspendedRevKey  = "suspendedRevision"
	sourceResumedAtKey     = "resumedAt"
	sourceResumedByKey     = "resumedBy"
	sourceSyncRequestedKey = "syncRequested"
	sourceSyncAnsweredKey  = "syncAnswered"
	sourceSyncResultKey    = "syncResult"
)

// Holders of a revision (gitsync.Hold.By): suspend is wired; the others
// are the names rings, change windows, the purge guard and health waits
// report under.
const (
	heldBySuspend    = "suspend"
	heldByWindow     = "window"
	heldByRing       = "ring"
	heldByPurgeGuard = "purge-guard"
	heldByHealthWait = "health-wait"
)

// holders are the names addon_operator_source_held is exported for.
var holders = []string{heldBySuspend, heldByWindow, heldByRing, heldByPurgeGuard, heldByHealthWait}

// suspension is a suspended source as /status shows it.
type suspension struct {
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since"`
	By     string    `json:"by,omitempty"`
}

// suspendedIn reads a suspension from the source ConfigMap's data (nil:
// not suspended). A value of suspended that is not a boolean suspends:
// a typo must not apply what someone meant to hold. seen is the time
// used when suspendedAt is absent or malformed.
func suspendedIn(data map[string]string, seen time.Time) *suspension {
	v, ok := data[sourceSuspendedKey]
	if !ok {
		return nil
	}
	if on, err := strconv.ParseBool(v); err == nil && !on {
		return nil
	}
	s := &suspension{Reason: data[sourceSuspendReasonKey], By: data[sourceSuspendedByKey], Since: seen}
	if t, err := time.Parse(time.RFC3339, data[sourceSuspendedAtKey]); err == nil {
		// a suspendedAt no newer than the last resume is a past
		// suspension's (a kubectl resume that left the keys): its time
		// and who are not this one's
		if r, rerr := time.Parse(time.RFC3339, data[sourceResumedAtKey]); rerr == nil && !t.After(r) {
			s.By = ""
		} else {
			s.Since = t
		}
	}
	return s
}

// sourceControl is the operator's side of suspend and sync now: the
// suspension in force, the gate that holds new revisions while it lasts,
// and the sync requests under way.
type sourceControl struct {
	logger *slog.Logger
	// report posts a held commit's status (nil: commit status off);
	// acting says whether this replica reports and answers
	report func(commitstatus.Report)
	acting func() bool
	now    func() time.Time

	mu        sync.Mutex
	suspended *suspension
	asked     map[string]bool // sync requests being answered
}

func newSourceControl(logger *slog.Logger, report func(commitstatus.Report), acting func() bool) *sourceControl {
	return &sourceControl{logger: logger, report: report, acting: acting, now: time.Now, asked: map[string]bool{}}
}

// update takes the source ConfigMap's data; it returns the transition
// ("suspended", "resumed" or "": none) and the suspension now.
func (c *sourceControl) update(data map[string]string) (string, *suspension) {
	c.mu.Lock()
	defer c.mu.Unlock()
	before := c.suspended
	now := suspendedIn(data, c.now().UTC().Truncate(time.Second))
	if before != nil && now != nil && data[sourceSuspendedAtKey] == "" {
		now.Since = before.Since // seen before: since then
	}
	c.suspended = now
	switch {
	case before == nil && now != nil:
		return "suspended", now
	case before != nil && now == nil:
		return "resumed", nil
	}
	return "", now
}

// suspension is the suspension in force (nil: none).
func (c *sourceControl) suspension() *suspension {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.suspended == nil {
		return nil
	}
	s := *c.suspended
	return &s
}

// driftHeld: drift is reported, not corrected (lifecycle Config.DriftHeld).
func (c *sourceControl) driftHeld() bool { return c.suspension() != nil }

// gate is the syncer's gitsync.Gate: while suspended, every new revision
// is held, and its commit says so (state held, the forge's pending).
func (c *sourceControl) gate(rev gitsync.Revision) []gitsync.Hold {
	s := c.suspension()
	if s == nil {
		return nil
	}
	reason := "suspended"
	if s.Reason != "" {
		reason += ": " + s.Reason
	}
	if c.report != nil && c.acting() {
		c.report(commitstatus.Report{Commit: rev.Commit, State: commitstatus.Held, Reason: reason})
	}
	// Since left zero: the gatekeeper stamps when this commit was first
	// held, which the alert on held revisions measures (the suspension's
	// own start is source.suspended.since)
	return []gitsync.Hold{{By: heldBySuspend, Reason: s.Reason}}
}

// ask claims a sync request: false when it is answered or being answered.
func (c *sourceControl) ask(data map[string]string) (string, bool) {
	token := data[sourceSyncRequestedKey]
	if token == "" || token == data[sourceSyncAnsweredKey] {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.asked[token] {
		return "", false
	}
	c.asked[token] = true
	return token, true
}

func (c *sourceControl) done(token string) {
	c.mu.Lock()
	delete(c.asked, token)
	c.mu.Unlock()
}

// pinIn is the commit recorded under key that a pod with an empty
// checkout starts on: suspendedRevision while suspended, heldAtRevision
// while the rollout holds a newer one ("": none recorded, or not a full
// SHA).
func pinIn(data map[string]string, key string) string {
	if rev := data[key]; shaRe.MatchString(rev) {
		return rev
	}
	return ""
}

// recordSuspendedRevision writes the current revision (the syncer's: what
// a restart with revisions on disk runs) as suspendedRevision while
// suspended (once), and once resumed removes it with the rest of the past
// suspension's keys (a kubectl resume may leave them): a pod that starts
// with an empty checkout while suspended starts on it, not on the ref's
// newest commit, and a later kubectl suspend is not dated by the old one.
func (s *startup) recordSuspendedRevision(ctx context.Context, data map[string]string, suspended bool) {
	var current string
	if rev := s.src.syncer.Current(); rev != nil {
		current = rev.Commit
	}
	stale := !suspended && (data[sourceSuspendedRevKey] != "" || data[sourceSuspendedAtKey] != "" ||
		data[sourceSuspendedByKey] != "" || data[sourceSuspendReasonKey] != "")
	switch {
	case suspended && data[sourceSuspendedRevKey] == "" && current != "":
	case stale:
	default:
		return
	}
	if _, _, err := s.sourceCM.Update(ctx, func(d map[string]string) (map[string]string, error) {
		if (suspendedIn(d, time.Now()) != nil) != suspended {
			return d, nil // changed since
		}
		if suspended {
			d[sourceSuspendedRevKey] = current
			return d, nil
		}
		for _, k := range []string{sourceSuspendedRevKey, sourceSuspendedAtKey, sourceSuspendedByKey, sourceSuspendReasonKey} {
			delete(d, k)
		}
		return d, nil
	}); err != nil {
		s.logger.Warn("record the suspended revision", "err", err)
	}
}

// transitionEvent records a suspension or a resume on the source
// ConfigMap, naming who and why when the ConfigMap says.
func transitionEvent(ctx context.Context, cm *kube.ConfigMap, what string, s *suspension, data map[string]string, logger *slog.Logger) {
	var reason, msg string
	switch what {
	case "suspended":
		reason = "SourceSuspended"
		msg = "source suspended"
		if s.By != "" {
			msg += " by " + s.By
		}
		msg += " at " + s.Since.Format(time.RFC3339)
		if s.Reason != "" {
			msg += ": " + s.Reason
		}
		msg += "; new revisions are fetched and held, drift is reported and not corrected (addon-operator source resume)"
	case "resumed":
		reason = "SourceResumed"
		msg = "source resumed"
		if by := data[sourceResumedByKey]; by != "" {
			msg += " by " + by
		}
		if at := data[sourceResumedAtKey]; at != "" {
			msg += " at " + at
		}
		msg += "; the newest revision applies now"
	default:
		return
	}
	logger.Info(msg)
	if err := cm.Event(ctx, "Normal", reason, msg); err != nil {
		logger.Warn("could not record an Event", "reason", reason, "err", err)
	}
}

// answerSync syncs now for a request (token) and, on the acting replica,
// writes the answer the CLI waits for. A newer request is answered by its
// own sync.
func (s *startup) answerSync(ctx context.Context, token string) {
	defer s.control.done(token)
	ctx, cancel := context.WithTimeout(ctx, 2*max(s.gt.Timeout, time.Minute))
	defer cancel()
	err := gitsync.SyncNow(ctx, s.src.syncer)
	if ctx.Err() != nil && err != nil {
		return // stopping
	}
	if !s.control.acting() {
		return
	}
	result := syncResult(s.src.syncer.Status(), err)
	s.logger.Info("sync requested through the source ConfigMap", "result", result)
	_, _, werr := s.sourceCM.Update(ctx, func(d map[string]string) (map[string]string, error) {
		if d[sourceSyncRequestedKey] == token {
			d[sourceSyncAnsweredKey], d[sourceSyncResultKey] = token, result
		}
		return d, nil
	})
	if werr != nil {
		s.logger.Error("answer a sync request", "err", werr)
	}
	if e := s.sourceCM.Event(ctx, "Normal", "SyncRequested", "sync requested ("+token+"): "+result); e != nil {
		s.logger.Warn("could not record an Event", "reason", "SyncRequested", "err", e)
	}
}

// syncResult is a requested sync's outcome in one line.
func syncResult(st gitsync.Status, err error) string {
	switch {
	case err != nil:
		return "error: " + err.Error()
	case st.Pending != nil:
		by := ""
		for i, h := range st.Held {
			if i > 0 {
				by += ", "
			}
			by += h.By
		}
		return fmt.Sprintf("fetched %s (held by %s)", st.Pending.Commit, by)
	case st.Current != nil:
		return fmt.Sprintf("fetched %s (current)", st.Current.Commit)
	}
	return "fetched"
}

// sourceView is /status's source: the syncer's, the suspension, and
// every hold of a revision (gitsync's and the purge guard's).
type sourceView struct {
	gitsync.Status
	Suspended *suspension    `json:"suspended,omitempty"`
	Held      []gitsync.Hold `json:"held,omitempty"`
	// Rollout and Windows are the fleet's (fleet.go; nil: no policy)
	Rollout *rolloutView `json:"rollout,omitempty"`
	Windows *windowsView `json:"windows,omitempty"`
}

// view is /status's source now.
func (s *startup) sourceView() sourceView {
	v := sourceView{Status: s.src.syncer.Status(), Suspended: s.control.suspension()}
	v.Held = append(v.Held, v.Status.Held...)
	if h := s.purgeHold(); h != nil {
		v.Held = append(v.Held, *h)
	}
	if reason, since, ok := s.configHold.Held(); ok {
		// a ConfigMap edit a window holds (docs/operator.md, "Fleets")
		v.Held = append(v.Held, gitsync.Hold{By: heldByWindow, Reason: "ConfigMap change: " + reason, Since: since})
	}
	if s.fleet != nil {
		running := ""
		if v.Current != nil {
			running = v.Current.Commit
		}
		v.Rollout, v.Windows = s.fleet.views(running)
	}
	return v
}

// purgeHold is the purge guard's hold of a revision (nil: none), since
// this process first saw it.
func (s *startup) purgeHold() *gitsync.Hold {
	errText := ""
	if st := s.operator.Status(); st.TreeReason == "PurgeRefused" { // docs/operator.md, "Purge guard"
		errText = st.TreeError
	}
	s.purge.mu.Lock()
	defer s.purge.mu.Unlock()
	if errText == "" {
		s.purge.since, s.purge.text = time.Time{}, ""
		return nil
	}
	if errText != s.purge.text {
		s.purge.since, s.purge.text = time.Now().UTC(), errText
	}
	return &gitsync.Hold{By: heldByPurgeGuard, Reason: errText, Since: s.purge.since}
}

// purgeSeen is since when the purge guard holds the revision it holds.
type purgeSeen struct {
	mu    sync.Mutex
	since time.Time
	text  string
}

// stillSuspended reads the source ConfigMap: is the source suspended now?
// A read that fails says yes (hold on rather than apply).
func (s *startup) stillSuspended(ctx context.Context) bool {
	data, err := s.sourceCM.Get(ctx)
	return err != nil || suspendedIn(data, time.Now()) != nil
}
