package main

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/addonops/addon-operator/health"
	"github.com/addonops/addon-operator/kube"
)

// healthOptions are the settings of module health (docs/operator.md,
// "Health").
type healthOptions struct {
	Enabled         bool
	ProgressTimeout time.Duration
}

func (o *healthOptions) bind(fs *pflag.FlagSet, e *env) {
	fs.BoolVar(&o.Enabled, "health", e.boolean("ADDON_OPERATOR_HEALTH", true), "follow the health of modules' release objects (env ADDON_OPERATOR_HEALTH; false turns it off)")
	fs.DurationVar(&o.ProgressTimeout, "health-progress-timeout", e.duration("ADDON_OPERATOR_HEALTH_PROGRESS_TIMEOUT", 5*time.Minute),
		"how long an object may roll out before its module is Degraded; a chart's "+health.TimeoutAnnotation+" annotation overrides it (env ADDON_OPERATOR_HEALTH_PROGRESS_TIMEOUT)")
}

// newHealth wires the health tracker: the shared watches, the releases,
// Events on the values ConfigMap and its metrics; onTransition (nil: none)
// is told of every transition after its Event is recorded (the commit
// status), onEdited (nil: none) of each edit of a release's objects (the
// drift checks); helm's missing-resources check asks it first. It returns
// nil when health is off.
func newHealth(o healthOptions, watcher *kube.Watcher, helm *kube.Helm, events health.Recorder, reg prometheus.Registerer, logger *slog.Logger, onTransition func(health.Transition), onEdited func(string)) *health.Tracker {
	if !o.Enabled {
		return nil
	}
	record := health.Events(events, logger)
	if onTransition != nil {
		event := record
		record = func(tr health.Transition) { event(tr); onTransition(tr) }
	}
	t := health.NewTracker(health.KubeWatches(watcher), helm, health.Options{
		ProgressTimeout: o.ProgressTimeout, Logger: logger, Objects: watcher, OnTransition: record, OnEdited: onEdited,
	})
	reg.MustRegister(health.NewCollector(t))
	// a no-change module run asks the watches, not the API server, whether
	// its release's objects are there (docs/operator.md, "Helm releases")
	helm.SetPresence(t)
	return t
}
