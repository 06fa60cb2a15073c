package queue

import "errors"

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
