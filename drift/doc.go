// Package drift finds the objects of a Helm release that differ from what
// the chart rendered, in the fields the chart sets, and puts those fields
// back (docs/operator.md, "Drift").
//
// Detection is a server-side apply dry-run of each rendered object with
// the drift checks' own field manager (kube.FieldManagerDrift), compared
// with the live object: the API server merges, defaults and normalises, so
// only fields the chart sets can differ, and server-set fields (status,
// resourceVersion, managedFields) are left out of the compare. A field
// whose current owners are all other controllers (a write through a
// subresource such as an autoscaler's /scale, or a manager named in
// Options.IgnoreManagers) or the operator's own parts (the webhook
// registrar, hooks' object patches: Options.OwnManagers) is never drift
// and never corrected: it is pruned from the applied object.
//
// Where things are:
//   - compare.go: the compare of a live object with the dry-run result (pure).
//   - fieldpath.go: the API server's conflict causes, and pruning their
//     fields from an object.
//   - detector.go: the Detector: a release's manifest → objects, checks,
//     corrections, bounded in objects, bytes and concurrency.
//   - diff.go: the live diff `module diff` shows.
//   - redact.go: what the diff hides: the values of sensitive objects
//     (Secrets, Options.Sensitive) and of strings that embed them.
package drift
