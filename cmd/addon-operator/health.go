package main

import (
	"context"
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
// Events on the values ConfigMap and its metrics; also is told of every
// transition after the Events are recorded (the commit status); edited
// (nil: none) of each edit of a release's objects (the drift checks). It
// returns nil and a no-op when health is off.
func newHealth(o healthOptions, watcher *kube.Watcher, helm *kube.Helm, events health.Recorder, reg prometheus.Registerer, logger *slog.Logger, also func(health.Transition), edited func(string)) (*health.Tracker, func(context.Context)) {
	if !o.Enabled {
		return nil, func(context.Context) {}
	}
	record := health.Events(events, logger)
	t := health.NewTracker(health.KubeWatches(watcher), helm, health.Options{
		ProgressTimeout: o.ProgressTimeout, Logger: logger, Objects: watcher, OnTransition: func(tr health.Transition) {
			record(tr)
			also(tr)
		},
		OnEdited: edited,
	})
	reg.MustRegister(t.Collector())
	return t, t.Run
}
