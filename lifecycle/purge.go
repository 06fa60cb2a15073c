package lifecycle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/values"
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

// purgeGuard is the purge guard (docs/operator.md, "Purge guard"): a
// change that would uninstall more modules than the limit allows is not
// acted on, since an empty modules/ (a force-push, a wrong ref, a partial
// checkout) or a deleted values ConfigMap would otherwise uninstall
// everything. It keeps its verdicts for /status and for a confirmation;
// each check records its verdict in the same step, under the lock a
// confirmation takes, so a confirmation either passes the check or finds
// the refusal it confirms.
type purgeGuard struct {
	limit  int           // Config.PurgeLimit
	logger *slog.Logger  // refusals are logged
	events EventRecorder // and recorded on the source ConfigMap (nil: not)

	mu        sync.Mutex
	confirmed string    // the token allowed past the guard
	refused   *Revision // the revision a changed tree's check refused
	err       string    // why the last discovery purged nothing
	token     string    // what confirms the uninstalls it refused
	warned    string    // the refusal last recorded as an Event
}

// verdict is the guard's rule, with mu held. purged lists every release
// the change would remove: of removed directories, and of modules that
// the ConfigMap, values or enabled scripts disable. total is how many
// modules there were. A change whose token was confirmed passes: the
// commit when only directories were removed, else planToken's.
func (g *purgeGuard) verdict(commit, token string, purged []string, total int) error {
	n := len(purged)
	if n == 0 {
		return nil
	}
	var limit int
	allowed := false
	switch g.limit {
	case PurgeHalf:
		limit = total / 2
		allowed = n <= limit && n < total
	case PurgeNone:
	default:
		limit = g.limit
		allowed = n <= limit
	}
	if allowed || (token != "" && token == g.confirmed) {
		return nil
	}
	return fmt.Errorf("%w: revision %s would uninstall %d of %d modules (%s), more than ADDON_OPERATOR_PURGE_LIMIT allows (%s); raise the limit or confirm with `addon-operator source confirm-purge %s`",
		errPurgeGuard, shortCommit(commit), n, total, strings.Join(purged, ", "), limitText(g.limit, limit), token)
}

// checkTree judges a changed tree that removes module directories; a
// refused revision is kept, for a confirmation to load it again.
func (g *purgeGuard) checkTree(rev Revision, purged []string, total int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	err := g.verdict(rev.Commit, rev.Commit, purged, total)
	if err != nil {
		g.refused = &rev
	}
	return err
}

// checkDiscovery judges a discovery's uninstalls and keeps the verdict
// for /status and a confirmation.
func (g *purgeGuard) checkDiscovery(commit, token string, purged []string, total int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	err := g.verdict(commit, token, purged, total)
	g.err, g.token = "", ""
	if err != nil {
		g.err, g.token = err.Error(), token
	}
	return err
}

// forgetRefused: a newer revision replaces one the guard refused.
func (g *purgeGuard) forgetRefused() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refused = nil
}

// refusedCommit is the commit of the revision the guard refused ("" for none).
func (g *purgeGuard) refusedCommit() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.refused == nil {
		return ""
	}
	return g.refused.Commit
}

// status is the last discovery's refusal, and whether anything is held.
func (g *purgeGuard) status() (discoveryErr string, holding bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err, g.refused != nil || g.err != ""
}

// discoveryHeld: the running revision's last discovery left uninstalls
// undone until they are confirmed.
func (g *purgeGuard) discoveryHeld() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err != ""
}

// confirm records a confirmation of token (a commit or a plan). It returns
// the refused revision it lets through, to load again, or whether the
// running revision's discovery (its commit is running) refused it, to
// reload; nothing for a confirmation it already had.
func (g *purgeGuard) confirm(token, running string) (reload *Revision, rerun bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if token == g.confirmed {
		// every event of the source ConfigMap carries the key
		return nil, false
	}
	g.confirmed = token
	if g.refused != nil && g.refused.Commit == token {
		reload, g.refused = g.refused, nil
		return reload, false
	}
	return nil, g.err != "" && (running == token || g.token == token)
}

// warnOnce: a refusal not yet recorded as an Event.
func (g *purgeGuard) warnOnce(token string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	fresh := token != g.warned
	g.warned = token
	return fresh
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

// refusedEvent logs a refusal and records a Warning Event
// PurgeRefused, once per refused change, on the source ConfigMap: that is
// where the confirmation goes, and it outlives a deleted values ConfigMap
// (docs/operator.md, "Purge guard").
func (g *purgeGuard) refusedEvent(ctx context.Context, token string, err error) {
	if !g.warnOnce(token) {
		return
	}
	g.logger.Error("purge refused; the releases stay", "confirm", token, "err", err)
	if g.events == nil {
		return
	}
	if err := g.events.Warning(ctx, "PurgeRefused", err.Error()); err != nil {
		g.logger.Warn("could not record an Event", "reason", "PurgeRefused", "err", err)
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
	_, running := o.trees.RevisionInfo()
	refused, rerun := o.purge.confirm(commit, running)
	queues := o.queues.Get()
	switch {
	case refused != nil:
		o.logger.Info("purge confirmed; loading the revision again", "revision", commit)
		o.TreeChanged(*refused)
	case rerun && queues != nil:
		o.logger.Info("purge confirmed; reloading all modules", "revision", commit)
		o.steps.preemptReload()
	}
}

// configDisables lists the enabled modules whose <module>Enabled flag, or
// whose section as the literal false (values.Store.DisabledByConfig), the
// new config data sets to false while the running data does not: a
// commit of the config in git that disables them uninstalls them at the
// discovery after, so the guard counts them with the tree (docs/operator.md,
// "Purge guard").
func configDisables(model *loader.Model, enabled []string, before, after map[string]string) []string {
	var out []string
	for _, name := range enabled {
		m := model.Module(name)
		if m == nil {
			continue
		}
		for _, key := range []string{values.EnabledKey(m.Key), m.Key} {
			if flagFalse(after[key]) && !flagFalse(before[key]) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// flagFalse: a flag's YAML text says false.
func flagFalse(text string) bool {
	var b bool
	return text != "" && yaml.Unmarshal([]byte(text), &b) == nil && !b
}

// appendNew appends the names list lacks.
func appendNew(list, names []string) []string {
	for _, n := range names {
		if !slices.Contains(list, n) {
			list = append(list, n)
		}
	}
	return list
}
