// Package health owns module health: which objects each module's release
// has, the kstatus of each (sigs.k8s.io/cli-utils/pkg/kstatus) kept current
// from the operator's shared watches, and one status per module, Healthy,
// Progressing, Degraded or Unknown, with the objects that are not Current
// and why (docs/operator.md, "Health").
//
// A Tracker is told when a module's release was deployed or removed; it
// tells a listener of status transitions, and another of edits of a
// release's objects (an object's fingerprint, kept beside its kstatus,
// changed: the drift checks' cue, docs/operator.md "Drift"), and serves
// the statuses to /status, `module list` and its own metrics collector. It does not know
// the lifecycle: lifecycle calls it.
package health
