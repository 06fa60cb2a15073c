// Package lifecycle is the operator core: it turns events (tree changes,
// ConfigMap changes, Kubernetes events, schedules) into tasks and runs the
// documented steps of spec/LIFECYCLE-STEPS.md: start-up, reload all modules,
// module discovery, module run, delete and purge; it executes hooks and
// enabled scripts with their files and environment and applies their patches.
package lifecycle
