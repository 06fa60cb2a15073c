// Package statusapi is the operator's status and debug HTTP API
// (docs/operator.md, "Status", "Debug commands"; docs/security.md, "Who
// sees what"): /status, /queue, /metrics, /metrics/hooks, /healthz,
// /readyz and the /debug/ routes that only the operator's own host may
// call (LocalOnly).
//
// It reads the operator's parts through small interfaces declared here,
// one per part (providers.go): the running tree and module registry, the
// queues, the steps' verdicts on revisions, the hooks' last failures,
// health, drift reports, the kubernetes bindings' monitors and the
// webhooks. lifecycle.Operator wires them. It owns the /status and /debug
// row types (Status, ModuleStatus, WatchStatus, DebugModule, ...); a
// part's own status type stays with it (driftcheck.Status,
// health.ModuleHealth, runstate.Readiness), and the webhook part's is
// served as it marshals. It maps driftcheck's sentinel errors to codes.
//
// It imports runstate, driftcheck (whose Status and sentinel errors it
// serves), loader, values, queue, kube, health and prometheus; never
// lifecycle or its other sub-packages.
package statusapi
