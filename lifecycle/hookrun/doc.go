// Package hookrun runs one hook or one module's `enabled` script
// (docs/operator.md, "How hooks run"): it writes the run's temporary files
// (binding context, config values, values), sets the documented
// environment, runs the executable bounded by the hook timeout, reads back
// what it handed back (bounded, no link, no FIFO: docs/security.md,
// "Limits") and applies it: config patches to the ConfigMap, values patches
// to the running tree, object patches through an ObjectPatcher, metrics to
// the hook metrics store, a readiness hook's result to its module. It also
// keeps each hook's last failure for /debug/hooks and owns the one-line
// error of a failed run (HookError), whose output only /debug serves.
//
// Two entry points: Runner (New), the whole runner the operator wires,
// and EnabledScripts (NewEnabledScripts), which needs no cluster, no
// running tree and no metrics, so previews run enabled scripts with it
// alone.
//
// It imports lifecycle/runstate, lifecycle/metrics, loader, values,
// objectpatch, hookmetrics and internal/executor; never lifecycle or its
// other sub-packages, which reach it through their own small interfaces.
package hookrun
