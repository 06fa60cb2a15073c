package lifecycle

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/addonops/addon-operator/clusterconfig"
	"github.com/addonops/addon-operator/lifecycle/metrics"
	"github.com/addonops/addon-operator/lifecycle/runstate"
)

// configDrift reports the running tree's config drift: the values the
// cluster sets (the values ConfigMap) under keys the config in git sets
// too, which git's replace (runstate.Tree.Overrides). They are on /status
// (configDrift), in addon_operator_config_drift (one per overridden path,
// by key), and each new one is a Warning Event ConfigDrift on the values
// ConfigMap; none is applied: the fix is a commit (docs/operator.md,
// "Config in git"). It follows the running tree
// (Trees.Changed), so every transition that changes the overrides (a
// ConfigMap edit, a new revision, a hook's config patch) is reported.
type configDrift struct {
	trees   *runstate.Trees
	metrics *metrics.Recorder
	events  EventRecorder // nil: none
	logger  *slog.Logger
	// recorded are the overrides of the last report: one no longer there
	// and back again is new again
	recorded map[clusterconfig.Override]bool
}

// run reports each running tree until ctx is done.
func (d *configDrift) run(ctx context.Context) {
	for {
		// the channel first: a change after the load wakes the next pass
		_, changed := d.trees.Changed()
		if t := d.trees.Load(); t != nil {
			d.report(ctx, t)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// report sets the metric, 0 for each key git sets without drift (so an
// alert tells none from not reported), and records the new overrides.
func (d *configDrift) report(ctx context.Context, t *runstate.Tree) {
	overrides := t.Overrides
	perKey := map[string]int{}
	if t.Model != nil && t.Model.Config != nil {
		for k := range t.Model.Config.Data {
			perKey[k] = 0
		}
	}
	now := make(map[clusterconfig.Override]bool, len(overrides))
	for _, o := range overrides {
		perKey[o.Key]++
		now[o] = true
	}
	d.metrics.ConfigDrift.Reset()
	for k, n := range perKey {
		d.metrics.ConfigDrift.WithLabelValues(k).Set(float64(n))
	}
	for _, o := range overrides {
		if d.recorded[o] {
			continue
		}
		// the key path and the file, never a value (docs/security.md)
		msg := fmt.Sprintf("the values ConfigMap sets %s, which %s in git sets too: git's value is used: change it with a commit", o, o.File)
		d.logger.Warn("config drift: a ConfigMap value git replaces is not applied", "key", o.Key, "path", o.Path, "file", o.File)
		if d.events != nil {
			if err := d.events.Warning(ctx, "ConfigDrift", msg); err != nil {
				d.logger.Warn("could not record an Event", "reason", "ConfigDrift", "err", err)
			}
		}
	}
	d.recorded = now
}
