package lifecycle

import (
	"fmt"
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
// revision whose tree lost more modules than the limit allows is not
// acted on, since an empty modules/ (a force-push, a wrong ref, a partial
// checkout) would otherwise uninstall everything. total is how many
// modules there were; a revision confirmed through ConfirmPurge passes.
func (s *steps) checkPurge(commit string, purged []string, total int) error {
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
	confirmed := commit != "" && commit == s.purgeConfirmed
	s.mu.Unlock()
	if allowed || confirmed {
		return nil
	}
	return fmt.Errorf("purge guard: revision %s would uninstall %d of %d modules (%s), more than ADDON_OPERATOR_PURGE_LIMIT allows (%s); raise the limit or confirm with `addon-operator source confirm-purge %s`",
		shortCommit(commit), n, total, strings.Join(purged, ", "), limitText(s.cfg.PurgeLimit, limit), commit)
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
	rerun := o.c.purgeError != "" && o.c.rev.Commit == commit && o.c.queues != nil
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
