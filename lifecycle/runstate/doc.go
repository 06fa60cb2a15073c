// Package runstate is the operator's running state (docs/architecture.md,
// "The running state"): three small holders, each with its own lock, that
// the parts of the operator are handed:
//
//   - Trees: the running tree (model, values store, revision, the ConfigMap
//     data the store holds) as one immutable value behind an atomic pointer,
//     replaced whole by a transition;
//   - Modules: what the steps learned about each module and the modules the
//     last discovery enabled;
//   - Queues: the task queues, which Run creates.
//
// It also owns the one admission of ConfigMap data against a tree (Admit)
// and the per-module settings read from that data (maintenance and drift
// modes). Trees and Modules announce their changes: Changed returns a
// version and a channel closed at the next change, so the parts that follow
// them (webhook registration, schedules, the revision reporter, state
// metrics) wait on it instead of polling or being called one by one.
//
// It imports loader, values, clusterconfig, queue, gitsync and kube only; never lifecycle or its
// other sub-packages. The steps' own bookkeeping (a reload's phase, the
// revisions on the way, the purge guard's verdicts) lives with the steps.
package runstate
