// Package webhookrun is the operator's part of validating, mutating and
// conversion webhooks (docs/operator.md, "Validating and conversion
// webhooks"): which webhook bindings of the running tree are registered
// (global hooks' and enabled modules' hooks', and before the first
// discovery what the last run left), their registration through a
// Registrar, the /status view of them (Status), and the answers to the
// API server's requests, each by running the bound hook at once, outside
// the queues (a webhook must answer within its timeout even while "main"
// retries).
//
// Registration follows runstate's announcements: Run waits on
// runstate.Trees.Changed and runstate.Modules.Changed, and on its own clock
// only to retry a failed registration (with backoff) or to re-apply
// unchanged bindings once a minute. Nothing polls.
//
// It imports runstate, loader, webhook, the Kubernetes API types and
// internal/executor (the result file's bound) only; never lifecycle or
// its other sub-packages: it reaches the hook runner
// and the bindings' snapshots through HookRunner and Snapshots, small
// interfaces lifecycle fills with adapters.
package webhookrun
