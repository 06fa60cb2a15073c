package health

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Recorder records Kubernetes Events about a module: on its Module object
// or the values ConfigMap (modulestatus.Events; docs/operator.md,
// "Events").
type Recorder interface {
	ModuleEvent(ctx context.Context, module, eventType, reason, message string) error
}

// Event reasons.
const (
	ReasonDegraded = "ModuleDegraded"
	ReasonHealthy  = "ModuleHealthy"
)

// eventTimeout bounds one Event's API call: the listener runs on the
// tracker's goroutine.
const eventTimeout = 10 * time.Second

// Events is a listener that records a Warning Event when a module turns
// Degraded and a Normal one when a Degraded module is Healthy again.
// Progressing and Unknown are not recorded (every deploy passes through
// them; a new watch is Unknown until it lists), nor is a module's first
// Healthy; a status already recorded for the module is not recorded again
// (docs/operator.md, "Health").
func Events(rec Recorder, logger *slog.Logger) func(Transition) {
	if logger == nil {
		logger = slog.Default()
	}
	var mu sync.Mutex
	last := map[string]string{} // the reason last recorded, by module
	return func(tr Transition) {
		var eventType, reason string
		switch tr.Health.Status {
		case Degraded:
			eventType, reason = "Warning", ReasonDegraded
		case Healthy:
			eventType, reason = "Normal", ReasonHealthy
		default:
			return
		}
		mu.Lock()
		prev := last[tr.Module]
		skip := prev == reason || (reason == ReasonHealthy && prev != ReasonDegraded)
		if !skip {
			last[tr.Module] = reason
		}
		mu.Unlock()
		if skip {
			return
		}
		msg := "module " + tr.Module + " is " + string(tr.Health.Status)
		if tr.Health.Message != "" {
			msg += ": " + tr.Health.Message
		}
		ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
		defer cancel()
		if err := rec.ModuleEvent(ctx, tr.Module, eventType, reason, msg); err != nil {
			logger.Warn("could not record a health Event", "module", tr.Module, "reason", reason, "err", err)
		}
	}
}
