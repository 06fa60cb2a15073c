package queue

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// MainQueue is the queue every task goes to unless a binding names another.
const MainQueue = "main"

// Kind names what a task does (the handlers' own names, as the dump shows
// them).
type Kind string

// Key names the work a task does: its kind and the module, or the hook
// and binding, it is for ("" where it has none). Keys are comparable, so
// superseding and merging compare them, never a task's data; Module, Hook
// and Binding also label the task in the operator's metrics.
type Key struct {
	Kind                  Kind
	Module, Hook, Binding string
}

// Task is one unit of work.
type Task struct {
	// Key and Description are shown in the dump.
	Key         Key
	Description string
	// Do runs the task; an error sends it back to the head of its queue,
	// but a TerminalError, which drops it (errors.go).
	Do func(ctx context.Context) error
	// AllowFailure drops the task after a failure instead of retrying it.
	AllowFailure bool
	// OnFailure is told of every failed attempt (for metrics and logs).
	OnFailure func(err error, attempts int)
	// Merge, when set, is offered each task added right behind this one
	// while it waits: it folds the later task in and reports true, or
	// reports false and the later task is queued on its own. It reads the
	// later task's Key and Payload.
	Merge func(later *Task) bool
	// Payload is the task's typed data, for Merge (each kind has its own
	// type, in the package that queues it).
	Payload Payload
	// Members are the keys of the work a task does for several keys at
	// once (the module runs of one weight group); Drop removes one of them
	// when a task that supersedes it is queued, so that work is found and
	// replaced wherever it waits. A task whose members are all dropped is
	// dropped.
	Members []Key
	Drop    func(member Key)

	id        uint64
	attempts  int
	lastError string
	queuedAt  time.Time
	running   bool
	// retry: a failed task waits at the head until it fires; anything that
	// preempts it runs meanwhile
	retry <-chan time.Time
	// held, heldSince: a task whose Do returned a WaitError waits at the
	// head until wake (or retry) fires, like a failed one
	wake      <-chan struct{}
	held      string
	heldSince time.Time
	// started: its first run began (OnStart is told once)
	started bool
	// urgent: queued by Preempt and not yet failed; runs before a failing task
	urgent bool
	// supersedes: for an urgent task, the keys of the work it replaces
	supersedes func(Key) bool
}

// Payload is a task's typed data; the queue never reads it.
type Payload interface {
	// TaskKind is the kind of the tasks that carry it.
	TaskKind() Kind
}

// supersede applies a superseding task's test to x, which waits: x goes
// when its key is superseded or all its members are; a superseded member
// alone is dropped from it. Called with the queue's lock held, while x
// does not run.
func supersede(x *Task, sup func(Key) bool) bool {
	if sup == nil {
		return false
	}
	if sup(x.Key) {
		return true
	}
	if len(x.Members) == 0 {
		return false
	}
	kept := x.Members[:0:0]
	for _, m := range x.Members {
		if sup(m) {
			x.Drop(m)
			continue
		}
		kept = append(kept, m)
	}
	x.Members = kept
	return len(kept) == 0
}

// Options configure a Set.
type Options struct {
	RetryMin, RetryMax time.Duration
	Logger             *slog.Logger
	// After is the clock (default time.After): tests make backoff instant.
	After func(time.Duration) <-chan time.Time
	Now   func() time.Time
	// OnLength is told the length of a queue whenever it changes.
	OnLength func(queue string, length int)
	// OnStart is told how long a task waited from being queued to its
	// first attempt; OnAction how long an Add, AddAfterCurrent or Preempt
	// held its queue (the operator's metrics, docs/operator.md "Metrics").
	OnStart  func(queue string, t *Task, waited time.Duration)
	OnAction func(queue, action string, took time.Duration)
}

// Set is the named queues, each with one worker.
type Set struct {
	opts   Options
	ctx    context.Context
	mu     sync.Mutex
	queues map[string]*Queue
	nextID atomic.Uint64
	wg     sync.WaitGroup
	closed bool // Wait was called: no new workers
}

// NewSet creates the queues; workers run until ctx is done.
func NewSet(ctx context.Context, opts Options) *Set {
	if opts.RetryMin <= 0 {
		opts.RetryMin = 5 * time.Second
	}
	if opts.RetryMax < opts.RetryMin {
		opts.RetryMax = opts.RetryMin
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.After == nil {
		opts.After = time.After
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Set{opts: opts, ctx: ctx, queues: map[string]*Queue{}}
}

// Queue returns the named queue, starting its worker on first use.
func (s *Set) Queue(name string) *Queue {
	if name == "" {
		name = MainQueue
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.queues[name]; ok {
		return q
	}
	q := &Queue{name: name, set: s, wake: make(chan struct{}, 1), logger: s.opts.Logger.With("queue", name)}
	if s.closed {
		return q // after shutdown: accepts tasks that never run
	}
	s.queues[name] = q
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		q.work(s.ctx)
	}()
	return q
}

// Main is the "main" queue.
func (s *Set) Main() *Queue { return s.Queue(MainQueue) }

// Wait blocks until every worker has stopped (after ctx is done); queues
// asked for afterwards get no worker.
func (s *Set) Wait() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.wg.Wait()
}

// Queue is a FIFO of tasks with one worker.
type Queue struct {
	name   string
	set    *Set
	logger *slog.Logger
	wake   chan struct{}

	mu    sync.Mutex
	tasks []*Task
}

func (q *Queue) prepare(t *Task) {
	t.id = q.set.nextID.Add(1)
	t.queuedAt = q.set.opts.Now()
}

// Add appends tasks. A task that the last queued (not running) task's
// Merge takes is folded into it instead.
func (q *Queue) Add(tasks ...*Task) {
	defer q.action("add", q.set.opts.Now())
	q.mu.Lock()
	for _, t := range tasks {
		if n := len(q.tasks); n > 0 {
			last := q.tasks[n-1]
			if !last.running && last.Merge != nil && last.Merge(t) {
				continue
			}
		}
		q.prepare(t)
		q.tasks = append(q.tasks, t)
	}
	q.changed()
	q.mu.Unlock()
}

// AddAfterCurrent inserts tasks right after the running task (at the head
// when none runs), so a task's follow-up work runs before later events.
//
// Changes that pre-empted the running task (Preempt) still go first: the
// tasks go after them, and those they supersede are not added.
func (q *Queue) AddAfterCurrent(tasks ...*Task) {
	defer q.action("add_after_current", q.set.opts.Now())
	q.mu.Lock()
	pos := 0
	for pos < len(q.tasks) && (q.tasks[pos].running || q.tasks[pos].urgent) {
		pos++
	}
	waiting := q.tasks[:pos]
	tasks = slices.DeleteFunc(slices.Clone(tasks), func(t *Task) bool {
		return slices.ContainsFunc(waiting, func(u *Task) bool { return !u.running && supersede(t, u.supersedes) })
	})
	for _, t := range tasks {
		q.prepare(t)
	}
	q.tasks = slices.Insert(q.tasks, pos, tasks...)
	q.changed()
	q.mu.Unlock()
}

// Preempt puts t at the head of the queue, ahead of a task that keeps
// failing (its backoff wait ends) and behind the running task and earlier
// preempting ones. Waiting work whose key supersedes reports is dropped
// (a whole task, or one member of a task, see Task.Members), and so is a
// running task that fails afterwards: t replaces that work.
func (q *Queue) Preempt(t *Task, supersedes func(Key) bool) {
	defer q.action("preempt", q.set.opts.Now())
	q.mu.Lock()
	if supersedes != nil {
		q.tasks = slices.DeleteFunc(q.tasks, func(x *Task) bool { return !x.running && supersede(x, supersedes) })
	}
	pos := 0
	for pos < len(q.tasks) && (q.tasks[pos].running || q.tasks[pos].urgent) {
		pos++
	}
	q.prepare(t)
	t.urgent, t.supersedes = true, supersedes
	q.tasks = slices.Insert(q.tasks, pos, t)
	q.changed()
	q.mu.Unlock()
}

func (q *Queue) action(name string, start time.Time) {
	if f := q.set.opts.OnAction; f != nil {
		f(q.name, name, q.set.opts.Now().Sub(start))
	}
}

// HasQueuedKey reports whether a task of this key waits (not running).
func (q *Queue) HasQueuedKey(k Key) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.ContainsFunc(q.tasks, func(t *Task) bool { return !t.running && t.Key == k })
}

// Blocked reports whether a task in the queue has failed and waits for,
// or runs, its retry, or is held (a WaitError): what comes behind it waits
// for as long.
func (q *Queue) Blocked() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.ContainsFunc(q.tasks, func(t *Task) bool { return t.attempts > 0 || t.held != "" })
}

// Len is the number of tasks, the running one included.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.tasks)
}

// changed runs with mu held.
func (q *Queue) changed() {
	if f := q.set.opts.OnLength; f != nil {
		f(q.name, len(q.tasks))
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *Queue) work(ctx context.Context) {
	for {
		q.mu.Lock()
		var t *Task
		var retry <-chan time.Time
		var wake <-chan struct{}
		var waited time.Duration
		first := false
		if len(q.tasks) > 0 {
			t = q.tasks[0]
			if retry, wake = t.retry, t.wake; retry == nil && wake == nil {
				t.running = true
				first, t.started = !t.started, true
				waited = q.set.opts.Now().Sub(t.queuedAt)
			}
		}
		q.mu.Unlock()
		if first && q.set.opts.OnStart != nil {
			q.set.opts.OnStart(q.name, t, waited)
		}
		if t == nil || retry != nil || wake != nil {
			fired := false
			select {
			case <-ctx.Done():
				return
			case <-q.wake:
			case <-retry:
				fired = true
			case <-wake:
				fired = true
			}
			if fired {
				q.mu.Lock()
				t.retry, t.wake = nil, nil
				q.mu.Unlock()
			}
			continue
		}
		err := q.run(ctx, t)
		if ctx.Err() != nil {
			return
		}
		q.finish(t, err)
	}
}

// finish removes a task that succeeded, may fail, or failed terminally
// (errors.go), and otherwise keeps it at the head with its backoff, behind
// the tasks that preempted it while it ran; one of those that supersedes it
// drops it instead.
func (q *Queue) finish(t *Task, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	t.running, t.urgent = false, false
	i := slices.Index(q.tasks, t)
	j := i + 1
	superseded := false
	for j < len(q.tasks) && q.tasks[j].urgent {
		if err != nil && supersede(t, q.tasks[j].supersedes) {
			superseded = true
		}
		j++
	}
	if w, ok := isWait(err); ok && !superseded {
		q.hold(t, w, i, j)
		return
	}
	t.held, t.heldSince = "", time.Time{}
	terminal := IsTerminal(err)
	if err == nil || t.AllowFailure || superseded || terminal {
		switch {
		case err != nil && superseded:
			msg := "failed task superseded"
			if _, held := isWait(err); held {
				msg = "held task superseded"
			}
			q.logger.Info(msg, "task", t.Description, "err", err)
		case terminal && !t.AllowFailure:
			q.logger.Error("task failed; not retried", "task", t.Description, "reason", Reason(err), "err", err)
		}
		q.tasks = slices.Delete(q.tasks, i, i+1)
		q.changed()
		return
	}
	t.attempts++
	t.lastError = err.Error()
	delay := Backoff(q.set.opts.RetryMin, q.set.opts.RetryMax, t.attempts)
	t.retry = q.set.opts.After(delay)
	// preempting tasks that came while it ran go first
	q.tasks = slices.Insert(slices.Delete(q.tasks, i, i+1), j-1, t)
	q.logger.Error("task failed; retrying", "task", t.Description, "attempt", t.attempts, "retry_in", delay, "err", err)
	q.changed()
}

// hold keeps t, whose Do returned w, at the head (behind the tasks that
// preempted it while it ran, at j) until w's wake or timeout; called with
// mu held.
func (q *Queue) hold(t *Task, w *WaitError, i, j int) {
	t.wake, t.retry = w.Wake, w.Timeout
	if t.wake == nil && t.retry == nil {
		t.retry = q.set.opts.After(q.set.opts.RetryMin)
	}
	if t.held == "" {
		t.heldSince = q.set.opts.Now()
		q.logger.Info("task held", "task", t.Description, "reason", w.Reason)
	}
	t.held = w.Reason
	q.tasks = slices.Insert(slices.Delete(q.tasks, i, i+1), j-1, t)
	q.changed()
}

func (q *Queue) run(ctx context.Context, t *Task) (err error) {
	defer func() {
		// a bug in one task must not stop the queue; it is retried like a failure
		if r := recover(); r != nil {
			q.logger.Error("task panicked", "task", t.Description, "panic", r)
			err = &panicError{r}
		}
	}()
	err = t.Do(ctx)
	if _, ok := isWait(err); ok {
		return err
	}
	if err != nil && t.OnFailure != nil {
		t.OnFailure(err, t.attempts+1)
	}
	if err != nil && t.AllowFailure {
		q.logger.Warn("task failed; allowFailure drops it", "task", t.Description, "err", err)
	}
	return err
}

type panicError struct{ v any }

func (p *panicError) Error() string { return "panic: " + slogValue(p.v) }

func slogValue(v any) string { return slog.AnyValue(v).String() }

// Backoff is the delay before retry number attempts (1-based): min, doubling,
// capped at max.
func Backoff(min, max time.Duration, attempts int) time.Duration {
	d := min
	for i := 1; i < attempts && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d
}
