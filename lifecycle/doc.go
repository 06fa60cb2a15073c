// Package lifecycle is the operator's facade and its task handlers
// (docs/architecture.md, "Packages and their walls"). Operator is what cmd
// wires and calls: it builds the parts (lifecycle/hookrun, binding,
// webhookrun, driftcheck, statusapi) on the running state of
// lifecycle/runstate, connects them through small adapters (the *wire*.go
// files, http.go) and runs the documented steps (docs/lifecycle.md):
// start-up, reload all modules, module discovery, module run, delete and
// purge, a new revision's adoption and ConfigMap edits, one file per
// action; a step returns an outcome that one recorder applies. What
// supersedes what in "main" is lifecycle/taskkind's table; the reload's
// phase is reloadPhase's, never read from the queue.
//
// Its parts never import it; it imports them, the leaves (runstate,
// metrics, taskkind) and the layers below.
package lifecycle
