package lifecycle

import (
	"github.com/addonops/addon-operator/lifecycle/driftcheck"
)

// Drift orchestration lives in lifecycle/driftcheck; these are the names
// cmd and the steps know it by.

// DriftDetector checks a module's release against the cluster, corrects
// and shows its drift (driftcheck.Detector).
type DriftDetector = driftcheck.Detector

// EditInbox holds the edits the health tracker tells (its OnEdited:
// EditInbox.Edited) for the drift checks on edits (Config.Edits); cmd
// makes it before both.
type EditInbox = driftcheck.Inbox

// NewEditInbox is an empty EditInbox.
func NewEditInbox() *EditInbox { return driftcheck.NewInbox() }

// kindDriftCorrect is a drift correction in "main", which a reload
// supersedes (events.go).
const kindDriftCorrect = driftcheck.KindCorrect

// newDriftChecker builds the drift checks from the operator's Config.
func newDriftChecker(cfg Config, o driftcheck.Options) *driftcheck.Checker {
	o.Detector, o.Mode, o.Logger, o.Now, o.After = cfg.Drift, cfg.DriftMode, cfg.Logger, cfg.Now, cfg.After
	o.Events, o.Quiet, o.Spacing, o.Inbox = cfg.ModuleEvents, cfg.driftQuiet, cfg.driftSpacing, cfg.Edits
	o.Held = cfg.DriftHeld
	return driftcheck.New(o)
}
