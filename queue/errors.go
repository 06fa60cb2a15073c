package queue

import (
	"errors"
	"time"
)

// A task's error says whether to try again, as controller-runtime's
// reconcile.TerminalError does (docs/architecture.md, "Errors carry the
// decision"): a TerminalError is reported through the task's failure path
// (OnFailure, the log) and the task is dropped, since running it again
// without a change cannot succeed; any other error, a RetryableError or a
// plain one, keeps the task at the head of its queue with backoff.

// TerminalError is a failure that a retry cannot fix: only a change (a new
// tree, a ConfigMap edit, another run) can. Reason is a short CamelCase
// word that /status shows beside the error.
type TerminalError struct {
	Reason string
	Err    error
}

func (e *TerminalError) Error() string { return e.Err.Error() }

func (e *TerminalError) Unwrap() error { return e.Err }

// Terminal marks err as terminal with a reason (nil stays nil).
func Terminal(reason string, err error) error {
	if err == nil {
		return nil
	}
	return &TerminalError{Reason: reason, Err: err}
}

// RetryableError is a failure that a retry may fix, with a reason for
// /status; a plain error is retryable too, without a reason.
type RetryableError struct {
	Reason string
	Err    error
}

func (e *RetryableError) Error() string { return e.Err.Error() }

func (e *RetryableError) Unwrap() error { return e.Err }

// Retryable marks err as retryable with a reason (nil stays nil).
func Retryable(reason string, err error) error {
	if err == nil {
		return nil
	}
	return &RetryableError{Reason: reason, Err: err}
}

// IsTerminal reports whether err, or an error it wraps, is terminal. An
// error that joins several is terminal only when each part is: one part
// that a retry may fix makes the whole worth retrying.
func IsTerminal(err error) bool {
	if err == nil {
		return false
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts := j.Unwrap()
		for _, p := range parts {
			if !IsTerminal(p) {
				return false
			}
		}
		return len(parts) > 0
	}
	var t *TerminalError
	return errors.As(err, &t)
}

// Reason is the reason a TerminalError or RetryableError in err's chain
// carries ("" for none).
func Reason(err error) string {
	var t *TerminalError
	if errors.As(err, &t) {
		return t.Reason
	}
	var r *RetryableError
	if errors.As(err, &r) {
		return r.Reason
	}
	return ""
}

// WaitError is not a failure: the task is not done yet and waits for
// something outside the queue (a module's health, docs/operator.md "Health
// waits"). It stays at the head of its queue, held, until Wake is closed
// (or sends) or Timeout fires, and then runs again; meanwhile a task that
// pre-empts runs first, and one that supersedes it drops it, as for a
// task in its backoff. A wait is not an attempt: no OnFailure, no
// backoff, no "failed" in the dump.
type WaitError struct {
	// Reason says what the task waits for, for the dump and the log.
	Reason string
	// Wake and Timeout end the hold; with neither, the task runs again
	// after the queue's shortest backoff.
	Wake    <-chan struct{}
	Timeout <-chan time.Time
}

func (e *WaitError) Error() string { return "waiting: " + e.Reason }

// Wait returns the WaitError that holds a task until wake or timeout.
func Wait(reason string, wake <-chan struct{}, timeout <-chan time.Time) error {
	return &WaitError{Reason: reason, Wake: wake, Timeout: timeout}
}

// isWait reports whether err holds its task (a WaitError) rather than
// failing it.
func isWait(err error) (*WaitError, bool) {
	var w *WaitError
	ok := errors.As(err, &w)
	return w, ok
}
