package lifecycle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// Config.PurgeLimit's special values; a positive limit is a number of
// modules.
const (
	// PurgeHalf, the default: a revision may purge at most half of the
	// enabled modules, and never all of them.
	PurgeHalf = 0
	// PurgeNone: no purge without a confirmation.
	PurgeNone = -1
)

// checkPurge is the purge guard (docs/operator.md, "Purge guard"): a
// change that would uninstall more modules than the limit allows is not
// acted on, since an empty modules/ (a force-push, a wrong ref, a partial
// checkout) or a deleted values ConfigMap would otherwise uninstall
// everything. purged lists every release the change would remove: of
// removed directories, and of modules that the ConfigMap, values or
// enabled scripts disable. total is how many modules there were. A change
// whose token was confirmed through ConfirmPurge passes: the commit when
// only directories were removed, else planToken's.
func (s *steps) checkPurge(commit, token string, purged []string, total int) error {
	n := len(purged)
	if n == 0 {
		return nil
	}
	var limit int
	allowed := false
	switch s.cfg.PurgeLimit {
	case PurgeHalf:
		limit = total / 2
		allowed = n <= limit && n < total
	case PurgeNone:
	default:
		limit = s.cfg.PurgeLimit
		allowed = n <= limit
	}
	s.mu.Lock()
	confirmed := token != "" && token == s.purgeConfirmed
	s.mu.Unlock()
	if allowed || confirmed {
		return nil
	}
	return fmt.Errorf("%w: revision %s would uninstall %d of %d modules (%s), more than ADDON_OPERATOR_PURGE_LIMIT allows (%s); raise the limit or confirm with `addon-operator source confirm-purge %s`",
		errPurgeGuard, shortCommit(commit), n, total, strings.Join(purged, ", "), limitText(s.cfg.PurgeLimit, limit), token)
}

// planToken names one set of uninstalls on one revision, for a
// confirmation: 40 hex digits, like a commit, so `source confirm-purge`
// takes it. A confirmation of it allows exactly those uninstalls on that
// revision, not a later, different loss.
func planToken(commit string, modules []string) string {
	modules = slices.Clone(modules)
	slices.Sort(modules)
	sum := sha256.Sum256([]byte(commit + "\x00" + strings.Join(modules, "\x00")))
	return hex.EncodeToString(sum[:20])
}

// purgeChecked keeps the guard's verdict on a discovery for /status and
// ConfirmPurge, and reports a refusal once as a Warning Event.
func (s *steps) purgeChecked(ctx context.Context, token string, err error) {
	s.mu.Lock()
	s.purgeError, s.purgeToken = "", ""
	if err != nil {
		s.purgeError, s.purgeToken = err.Error(), token
	}
	s.mu.Unlock()
	if err != nil {
		s.purgeRefusedEvent(ctx, token, err)
	}
}

// purgeRefusedEvent logs a refusal and records a Warning Event
// PurgeRefused, once per refused change, on the source ConfigMap: that is
// where the confirmation goes, and it outlives a deleted values ConfigMap
// (docs/operator.md, "Purge guard").
func (s *steps) purgeRefusedEvent(ctx context.Context, token string, err error) {
	s.mu.Lock()
	fresh := token != s.purgeWarned
	s.purgeWarned = token
	s.mu.Unlock()
	if !fresh {
		return
	}
	s.logger.Error("purge refused; the releases stay", "confirm", token, "err", err)
	if s.cfg.SourceEvents == nil {
		return
	}
	if err := s.cfg.SourceEvents.Warning(ctx, "PurgeRefused", err.Error()); err != nil {
		s.logger.Warn("could not record an Event", "reason", "PurgeRefused", "err", err)
	}
}

func limitText(setting, limit int) string {
	if setting == PurgeHalf {
		return fmt.Sprintf("half of them, never all: %d", limit)
	}
	return fmt.Sprint(limit)
}

func shortCommit(c string) string {
	if c == "" {
		return "(working copy)"
	}
	return c[:min(len(c), 12)]
}

// ConfirmPurge lets the revision of that commit purge past the limit (the
// source ConfigMap's confirmPurge key). A revision refused for it is
// loaded again; the running one, whose discovery kept releases, reloads.
func (o *Operator) ConfirmPurge(commit string) {
	if commit == "" {
		return
	}
	o.c.mu.Lock()
	if commit == o.c.purgeConfirmed {
		// every event of the source ConfigMap carries the key
		o.c.mu.Unlock()
		return
	}
	o.c.purgeConfirmed = commit
	refused := o.c.purgeRefused
	if refused != nil && refused.Commit == commit {
		o.c.purgeRefused = nil
	} else {
		refused = nil
	}
	rerun := o.c.purgeError != "" && (o.c.rev.Commit == commit || o.c.purgeToken == commit) && o.c.queues != nil
	o.c.mu.Unlock()
	switch {
	case refused != nil:
		o.c.logger.Info("purge confirmed; loading the revision again", "revision", commit)
		o.TreeChanged(*refused)
	case rerun:
		o.c.logger.Info("purge confirmed; reloading all modules", "revision", commit)
		o.c.queues.Main().Preempt(o.steps.reloadAllTask(), supersededByReload)
	}
}
