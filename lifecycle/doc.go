// Package lifecycle is the operator core: it turns events (tree changes,
// ConfigMap changes, Kubernetes events, schedules) into tasks and runs the
// documented steps (docs/operator.md): start-up, reload all modules,
// module discovery, module run, delete and purge; it executes hooks and
// enabled scripts with their files and environment and applies their
// patches. It owns the running state (the tree: model, values store,
// ConfigMap data, revision, as one immutable value replaced whole; each
// module's state), admits a tree against the ConfigMap data in one place,
// and adopts the revisions the git syncer checked (docs/operator.md, "Git
// wins"; docs/architecture.md, "The running state"). It gives the webhook
// package the running tree's webhook bindings and answers its requests by
// running the bound hooks (lifecycle/webhookrun).
package lifecycle
