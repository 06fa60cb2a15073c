package gitsync

import (
	"context"
	"time"
)

// CoalesceOption configures Coalesce.
type CoalesceOption func(*coalesceConfig)

type coalesceConfig struct {
	after func(time.Duration) <-chan time.Time
}

// CoalesceAfter sets the clock that times the interval (default
// time.After); tests pass one they fire themselves.
func CoalesceAfter(after func(time.Duration) <-chan time.Time) CoalesceOption {
	return func(c *coalesceConfig) { c.after = after }
}

// Coalesce returns a trigger that makes fn run, at most once per
// minInterval (counted from the start of a run) however often it is
// called. Triggers while fn runs or waits for the interval collapse into
// one pending run, so a burst of requests (every webhook a standby
// receives, say) costs at most one call to fn per interval and one
// goroutine, not one each. The first trigger after a quiet interval runs
// fn at once. The goroutine stops when ctx is done; fn gets ctx and must
// not panic. trigger never blocks.
func Coalesce(ctx context.Context, minInterval time.Duration, fn func(context.Context), opts ...CoalesceOption) (trigger func()) {
	c := coalesceConfig{after: time.After}
	for _, o := range opts {
		o(&c)
	}
	pending := make(chan struct{}, 1)
	go c.loop(ctx, minInterval, pending, fn)
	return func() {
		select {
		case pending <- struct{}{}:
		default: // a run is pending already and will cover this trigger
		}
	}
}

func (c coalesceConfig) loop(ctx context.Context, minInterval time.Duration, pending chan struct{}, fn func(context.Context)) {
	var ready <-chan time.Time // nil until the first run: that one need not wait
	for {
		if !receive(ctx, pending) {
			return
		}
		if ready != nil && !receive(ctx, ready) {
			return
		}
		// a trigger that came while waiting is served by the run below
		select {
		case <-pending:
		default:
		}
		ready = c.after(minInterval)
		fn(ctx)
	}
}

// receive waits for ch; false when ctx is done first.
func receive[T any](ctx context.Context, ch <-chan T) bool {
	select {
	case <-ctx.Done():
		return false
	case <-ch:
		return true
	}
}
