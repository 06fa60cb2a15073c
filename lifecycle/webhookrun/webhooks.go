package webhookrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/addonops/addon-operator/lifecycle/runstate"
	"github.com/addonops/addon-operator/loader"
	"github.com/addonops/addon-operator/webhook"
)

const (
	// RewriteEvery re-applies unchanged bindings, so a configuration or
	// CRD conversion changed behind the operator's back (a chart that
	// re-applies its CRD) is put back.
	RewriteEvery = time.Minute
	// DefaultRetryMin and DefaultRetryMax bound the backoff of a failed
	// registration (the read of what the last run registered, a server
	// that does not listen, an Apply the API server refused). The first
	// retry comes after a second, as the one-second poll this replaced
	// retried it.
	DefaultRetryMin = time.Second
	DefaultRetryMax = 30 * time.Second
)

// HookRun is one run of a hook for one webhook request.
type HookRun struct {
	Hook    *loader.Hook
	Binding string // the webhook's name (a conversion's binding name)
	// Type is the binding context's type: Validating, Mutating or
	// Conversion (shell-operator's names).
	Type    string
	Context map[string]any // the one binding context
	// ResponseVar names the response file in errors
	// (VALIDATING_RESPONSE_PATH, CONVERSION_RESPONSE_PATH); ResponseLimit
	// bounds what is read of it.
	ResponseVar   string
	ResponseLimit int64
}

// HookRunner runs a hook for a webhook request (lifecycle's hook runner):
// bounded by ctx (the webhook's timeout) and the hook timeout, with the
// response file in $VALIDATING_RESPONSE_PATH, $ADMISSION_RESPONSE_PATH and
// $CONVERSION_RESPONSE_PATH, and returns what the hook wrote there. Values
// and config patches, metrics and object patches it writes are not
// applied: a webhook run answers the API server and changes nothing else.
type HookRunner interface {
	RunWebhookHook(ctx context.Context, run HookRun) ([]byte, error)
}

// Snapshots reads the named kubernetes bindings' snapshots of a hook's
// running monitors (lifecycle's bindings), by binding name.
type Snapshots interface {
	Snapshots(h *loader.Hook, names []string) map[string]any
}

// Options are what Webhooks needs.
type Options struct {
	Logger  *slog.Logger
	Trees   *runstate.Trees
	Modules *runstate.Modules
	Runner  HookRunner
	// Snapshots: nil, every snapshot is empty.
	Snapshots Snapshots
	// Registrar: nil, no webhook server configured (a tree that binds a
	// webhook gets an error on /status).
	Registrar Registrar
	// Now and After are the clock of the retries and the rewrite (tests
	// drive them without sleeping); default: the system's.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	// RetryMin and RetryMax bound the backoff of a failed registration
	// (default DefaultRetryMin, DefaultRetryMax).
	RetryMin, RetryMax time.Duration
}

// Webhooks registers the webhook bindings of the running tree (global
// hooks, and hooks of enabled modules) and answers the API server's
// requests by running the bound hook at once, outside the queues.
type Webhooks struct {
	opts    Options
	logger  *slog.Logger
	trees   *runstate.Trees
	modules *runstate.Modules
	reg     Registrar

	// inherited is what was registered before the first discovery (read
	// once by sync, its only user): until a discovery resolved which
	// modules are enabled, a module's webhooks stay registered as the
	// last run left them, but for those the tree no longer binds (a
	// restart must neither strip an enabled module's webhooks nor add a
	// disabled one's), and a request for one is answered by its
	// failurePolicy, not by the hook of a module that may be disabled.
	inherited map[string]bool

	mu        sync.Mutex
	table     table
	status    Status
	applied   string // digest of the bindings last registered
	appliedAt time.Time
}

var _ webhook.Reviewer = (*Webhooks)(nil)

// New prepares the webhooks of the running tree; Run keeps their
// registration in step with it.
func New(opts Options) *Webhooks {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.After == nil {
		opts.After = time.After
	}
	if opts.RetryMin <= 0 {
		opts.RetryMin = DefaultRetryMin
	}
	if opts.RetryMax < opts.RetryMin {
		opts.RetryMax = max(DefaultRetryMax, opts.RetryMin)
	}
	return &Webhooks{opts: opts, logger: opts.Logger, trees: opts.Trees, modules: opts.Modules, reg: opts.Registrar}
}

// Run keeps the registration in step with the running tree and the
// modules' enabled states until ctx ends: it syncs at start, then each
// time the tree holder or the module registry announces a change (a burst
// of changes while it syncs wakes it once), to retry a failed sync with
// backoff, and to rewrite unchanged bindings every RewriteEvery.
// Configurations stay when the operator stops: a restart must not open a
// window in which objects go unchecked.
func (w *Webhooks) Run(ctx context.Context) {
	var (
		failures int
		timer    <-chan time.Time // the retry or the rewrite
		timerAt  time.Time
	)
	for {
		// read before the sync: a change during it has closed these
		_, trees := w.trees.Changed()
		_, modules := w.modules.Changed()
		err := w.sync(ctx)
		var at time.Time
		switch {
		case w.reg == nil:
			// nothing is registered: only a change matters
		case err != nil:
			at = w.opts.Now().Add(backoff(w.opts.RetryMin, w.opts.RetryMax, failures))
			failures++
		default:
			failures = 0
			w.mu.Lock()
			at = w.appliedAt.Add(RewriteEvery)
			w.mu.Unlock()
		}
		// a sync that changed nothing keeps the timer it had: a module's
		// state moving many times in a reload starts no timer
		if !at.Equal(timerAt) {
			timer, timerAt = nil, at
			if !at.IsZero() {
				timer = w.opts.After(at.Sub(w.opts.Now()))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-trees:
		case <-modules:
		case <-timer:
			timer, timerAt = nil, time.Time{}
		}
	}
}

// backoff is the wait before the retry after n failed ones: min doubled
// each time, at most max.
func backoff(min, max time.Duration, n int) time.Duration {
	d := min
	for range n {
		if d >= max/2 {
			return max
		}
		d *= 2
	}
	return d
}

// sync routes requests by the running tree, starts the servers it needs
// and registers its bindings, from start-up on: the first 'reload all
// modules' may itself need the webhooks to answer (a module whose chart
// creates objects its own webhook checks), so none of this waits for it.
// Its error is the registration's (nil: registered, or nothing to do).
func (w *Webhooks) sync(ctx context.Context) error {
	known := w.modules.WasDiscovered()
	var err error
	if w.reg != nil && !known && w.inherited == nil {
		// read until it succeeds: without it the last run's registration
		// of modules not yet known would be stripped
		w.inherited, err = w.reg.Registered(ctx)
	}
	b, t, status, kinds := w.desired(known, w.inherited)
	for _, s := range status {
		if s.Error != "" {
			w.logger.Debug("webhook binding not registered", "hook", s.Hook, "module", s.Module, "binding", s.Name, "error", s.Error)
		}
	}
	sum := digestOf(b)
	now := w.opts.Now()
	w.mu.Lock()
	w.table = t
	w.status.Bindings = status
	current := sum == w.applied && now.Sub(w.appliedAt) < RewriteEvery
	w.mu.Unlock()
	if w.reg == nil {
		return nil
	}
	if l, ok := w.reg.(Listener); ok && err == nil && len(kinds) > 0 {
		err = l.Listen(ctx, kinds)
	}
	if err == nil && current {
		return nil
	}
	if err == nil {
		err = w.reg.Apply(ctx, b)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if w.status.Error != err.Error() {
			w.logger.Error("webhook registration failed", "error", err)
		}
		w.status.Error, w.applied = err.Error(), ""
		return err
	}
	w.status.Error, w.applied, w.appliedAt = "", sum, now
	return nil
}

func digestOf(v any) string {
	b, _ := json.Marshal(v)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Status is the /status view (nil when no tree binds a webhook).
func (w *Webhooks) Status() *Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.status.Bindings) == 0 && w.status.Error == "" {
		return nil
	}
	st := Status{Bindings: slices.Clone(w.status.Bindings), Error: w.status.Error}
	return &st
}

func (w *Webhooks) current() table {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.table
}
