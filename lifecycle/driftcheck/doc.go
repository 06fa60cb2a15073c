// Package driftcheck is the operator's drift orchestration
// (docs/operator.md, "Drift"; docs/architecture.md, "Who owns what"): it
// checks the running tree's ready modules against their charts on the
// auto-healing interval (CheckAll, called by lifecycle's heal loop) and
// shortly after an edit of their objects (Edited, Run), keeps the last
// reports for /status (Of), records the drifted-objects metric and one
// Event per new drift, and queues one correction per module in "main"
// (KindCorrect) when the module's mode is correct and it is not in
// maintenance. Diff is `module diff`; its refusals are the sentinel errors
// ErrNoDetector, ErrUnknownModule and ErrNotDeployed, which the HTTP layer
// maps to codes.
//
// It reads the running tree, the module registry and the queues
// (lifecycle/runstate), records through lifecycle/metrics and reaches the
// cluster through a Detector (drift.Detector); it imports drift, loader
// and queue besides. It must not import lifecycle or its other
// sub-packages.
package driftcheck
