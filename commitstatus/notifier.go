package commitstatus

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of Options.
const (
	defaultQueueSize   = 100
	defaultRate        = rate.Limit(1) // posts per second
	defaultBurst       = 10
	defaultRetryMin    = time.Second
	defaultRetryMax    = 5 * time.Minute
	defaultMaxAttempts = 10
	defaultTimeout     = 30 * time.Second
	// maxRetryAfter bounds what a Retry-After can make the worker wait.
	maxRetryAfter = time.Hour
	// postedKeys bounds the memory of what was posted (the dedup).
	postedKeys = 1000
)

// Options configure a Notifier.
type Options struct {
	Provider Provider
	// Cluster names the cluster in contexts and descriptions.
	Cluster string
	// Ring, if set, is the cluster's rollout ring: each description
	// starts with "[ring N] " so that clusters of the next ring can tell
	// which ring a status comes from (ParseOwn). The context stays
	// addon-operator/<cluster>, so required checks and older readers keep
	// matching it.
	Ring *int
	// PerModule posts a status per module as well as the revision's;
	// without it, reports of modules are dropped.
	PerModule bool
	// TargetURL is the link of every status ("": none).
	TargetURL string
	// QueueSize bounds the reports waiting to be posted (default 100).
	QueueSize int
	// Rate and Burst are the token bucket of posts (default 1/s, 10).
	Rate  rate.Limit
	Burst int
	// RetryMin and RetryMax bound the backoff of retries (default 1s,
	// 5m); MaxAttempts is how many posts a report gets (default 10).
	RetryMin, RetryMax time.Duration
	MaxAttempts        int
	// Timeout bounds one post (default 30s).
	Timeout time.Duration
	Logger  *slog.Logger
	// Now and After are the clock (tests drive it without sleeping).
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
}

func (o Options) withDefaults() Options {
	if o.QueueSize <= 0 {
		o.QueueSize = defaultQueueSize
	}
	if o.Rate <= 0 {
		o.Rate = defaultRate
	}
	if o.Burst <= 0 {
		o.Burst = defaultBurst
	}
	if o.RetryMin <= 0 {
		o.RetryMin = defaultRetryMin
	}
	if o.RetryMax < o.RetryMin {
		o.RetryMax = max(defaultRetryMax, o.RetryMin)
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = defaultMaxAttempts
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.After == nil {
		o.After = time.After
	}
	return o
}

// key is what a status is deduplicated by: GitHub keeps one status per
// commit and context, and so do we.
type key struct{ commit, context string }

// item is a status waiting to be posted.
type item struct {
	key       key
	status    Status
	attempts  int
	notBefore time.Time // a retry's backoff
}

// posted is what the forge holds for a key, as far as we know.
type posted struct {
	state       State
	description string
}

// Notifier posts reports as commit statuses. Report queues and returns at
// once; Run's one worker posts. The queue keeps one report per commit and
// context, the newest (an older one's state is stale by then); when it is
// full, the oldest waiting report makes room. A report whose state and
// description the forge already holds is not posted again (the spam of
// notification-controller#212 came from posting every reconcile).
type Notifier struct {
	opts    Options
	limiter *rate.Limiter

	mu     sync.Mutex
	queue  []*item
	posted map[key]posted
	order  []key     // posted's keys, oldest first, to bound it
	pause  time.Time // no post before this (a 429's Retry-After)
	// inflight is the key being posted: a report of it is queued even if
	// it matches what was posted before, since the post under way may
	// change that
	inflight *key
	dropped  int // reports the full queue pushed out
	wake     chan struct{}
}

// New makes a Notifier; Run starts its worker.
func New(o Options) (*Notifier, error) {
	if o.Provider == nil {
		return nil, errors.New("commit status: no provider")
	}
	o = o.withDefaults()
	return &Notifier{opts: o, limiter: rate.NewLimiter(o.Rate, o.Burst),
		posted: map[key]posted{}, wake: make(chan struct{}, 1)}, nil
}

// SetRing sets the ring the reports from now on carry (nil: none): the
// operator sets it from the running revision's config in git, so that it
// follows that config (docs/operator.md, "Fleets").
func (n *Notifier) SetRing(ring *int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ring != nil {
		r := *ring
		ring = &r
	}
	n.opts.Ring = ring
}

// Report queues r and returns at once. A report without a commit (no git)
// is dropped, as is a module's unless Options.PerModule.
func (n *Notifier) Report(r Report) {
	if r.Commit == "" || !r.State.Valid() || (r.Module != "" && !n.opts.PerModule) {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	st := Status{Commit: r.Commit, Context: statusContext(n.opts.Cluster, r.Module), Cluster: n.opts.Cluster,
		Module: r.Module, Ring: n.opts.Ring, State: r.State, Description: withRing(describe(r, n.opts.Cluster), n.opts.Ring),
		TargetURL: n.opts.TargetURL}
	k := key{st.Commit, st.Context}
	for _, it := range n.queue {
		if it.key == k {
			// the newest state wins; a backoff in force stays
			it.status, it.attempts = st, 0
			n.signal()
			return
		}
	}
	if (n.inflight == nil || *n.inflight != k) && n.posted[k] == (posted{st.State, st.Description}) {
		return
	}
	if len(n.queue) >= n.opts.QueueSize {
		old := n.queue[0]
		n.queue = n.queue[1:]
		n.dropped++
		n.opts.Logger.Warn("commit status queue full: dropped the oldest report", "revision", old.key.commit, "context", old.key.context, "state", old.status.State)
	}
	n.queue = append(n.queue, &item{key: k, status: st})
	n.signal()
}

func (n *Notifier) signal() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Dropped is how many reports a full queue pushed out.
func (n *Notifier) Dropped() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dropped
}

// Pending is how many reports wait to be posted.
func (n *Notifier) Pending() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.queue)
}

// Run posts queued reports until ctx is done; what is still queued then
// is dropped.
func (n *Notifier) Run(ctx context.Context) {
	for {
		k, wait, ok := n.next()
		if !ok {
			if !n.sleep(ctx, wait, true) {
				return
			}
			continue
		}
		// the token bucket: a wait here is not cut short by new reports,
		// which would take a token each time round
		now := n.opts.Now()
		if d := n.limiter.ReserveN(now, 1).DelayFrom(now); d > 0 && !n.sleep(ctx, d, false) {
			return
		}
		it := n.take(k)
		if it == nil {
			continue
		}
		n.post(ctx, it)
		n.mu.Lock()
		n.inflight = nil
		n.mu.Unlock()
	}
}

// next is the key of the first report that may be posted now, or how
// long until one may (0: none waits; only a new report wakes the worker).
func (n *Notifier) next() (key, time.Duration, bool) {
	now := n.opts.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	// the queue is read now, so a signal sent before is spent: a report
	// after this signals anew (Report signals under mu), and a stale
	// signal does not end the next sleep at once
	select {
	case <-n.wake:
	default:
	}
	if now.Before(n.pause) {
		return key{}, n.pause.Sub(now), false
	}
	var soonest time.Duration
	for _, it := range n.queue {
		if !now.Before(it.notBefore) {
			return it.key, 0, true
		}
		if d := it.notBefore.Sub(now); soonest == 0 || d < soonest {
			soonest = d
		}
	}
	return key{}, soonest, false
}

// take removes k's report from the queue.
func (n *Notifier) take(k key) *item {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i, it := range n.queue {
		if it.key == k {
			n.queue = append(n.queue[:i], n.queue[i+1:]...)
			n.inflight = &it.key
			return it
		}
	}
	return nil
}

// sleep waits d (d ≤ 0: no timer), or for a new report when wakeable; it
// is false once ctx is done.
func (n *Notifier) sleep(ctx context.Context, d time.Duration, wakeable bool) bool {
	var timer <-chan time.Time
	if d > 0 {
		timer = n.opts.After(d)
	}
	var wake <-chan struct{}
	if wakeable {
		wake = n.wake
	}
	select {
	case <-ctx.Done():
		return false
	case <-timer:
	case <-wake:
	}
	return true
}

// post sends one status unless the forge holds it already; a retryable
// failure goes back to the queue with a backoff, unless a newer report of
// its key came meanwhile.
func (n *Notifier) post(ctx context.Context, it *item) {
	st := it.status
	p := posted{st.State, st.Description}
	n.mu.Lock()
	same := n.posted[it.key] == p
	n.mu.Unlock()
	if same {
		return
	}
	log := n.opts.Logger.With("revision", st.Commit, "context", st.Context, "state", st.State)
	pctx, cancel := context.WithTimeout(ctx, n.opts.Timeout)
	err := n.opts.Provider.Post(pctx, st)
	cancel()
	if err == nil {
		n.remember(it.key, p)
		log.Info("commit status posted")
		return
	}
	if ctx.Err() != nil {
		return // shutting down
	}
	it.attempts++
	if !retryable(err) || it.attempts >= n.opts.MaxAttempts {
		log.Error("commit status not posted; giving up on this report", "err", err, "attempts", it.attempts)
		return
	}
	now := n.opts.Now()
	delay := backoff(n.opts.RetryMin, n.opts.RetryMax, it.attempts)
	var he *HTTPError
	if errors.As(err, &he) {
		if ra := min(retryAfter(he.RetryAfter, now), maxRetryAfter); ra > 0 {
			delay = max(delay, ra)
			n.mu.Lock()
			// the forge asked us to wait: every post waits, not this one alone
			n.pause = later(n.pause, now.Add(delay))
			n.mu.Unlock()
		}
	}
	log.Warn("commit status not posted; retrying", "err", err, "attempt", it.attempts, "retry_in", delay)
	it.notBefore = now.Add(delay)
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, q := range n.queue {
		if q.key == it.key {
			return // a newer report of the key replaces this one
		}
	}
	if len(n.queue) >= n.opts.QueueSize {
		// the oldest report makes room, as in Report: this one
		n.dropped++
		log.Warn("commit status queue full: dropped the report being retried")
		return
	}
	n.queue = append([]*item{it}, n.queue...)
}

// remember records what the forge holds for k, forgetting the oldest key
// past postedKeys.
func (n *Notifier) remember(k key, p posted) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.posted[k]; !ok {
		n.order = append(n.order, k)
		if len(n.order) > postedKeys {
			delete(n.posted, n.order[0])
			n.order = n.order[1:]
		}
	}
	n.posted[k] = p
}

// backoff doubles from lo for each attempt, up to hi.
func backoff(lo, hi time.Duration, attempt int) time.Duration {
	d := lo
	for i := 1; i < attempt && d < hi; i++ {
		d *= 2
	}
	return min(d, hi)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
