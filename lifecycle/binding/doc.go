// Package binding is the event sources of hooks (docs/lifecycle.md, steps 2
// and 9–14): the monitors of kubernetes bindings and the schedules, which
// turn kubernetes events and schedule firings into hook runs in the
// bindings' queues; the coalescing of waiting events and the hooks' rate
// limits; and the binding contexts those runs and the ordered bindings get
// (docs/operator.md, "Kubernetes bindings", "Hook configs and binding
// contexts"). It also reports the monitors on /status (WatchStatus) and
// their snapshots as metrics (Collector).
//
// The schedules and monitors follow the running state on their own: a
// goroutine started by Start wakes at each change of runstate.Trees and
// runstate.Modules (and at the first convergence) and starts or stops
// them; no step calls it for that.
//
// It reaches the hook runner (HookRunner) and the steps (FollowUps) only
// through the small interfaces declared here, which lifecycle implements
// with adapters. It imports runstate, metrics, kube, loader and queue; never
// lifecycle nor its other sub-packages.
package binding
