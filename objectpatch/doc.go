// Package objectpatch reads and applies the Kubernetes object operations a
// hook writes to $KUBERNETES_PATCH_PATH (docs/operator.md, "Object patches
// from hooks"): parse.go turns the file (JSON lines or YAML documents) into
// checked operations without talking to the API server; apply.go applies
// them in order with a dynamic client and a discovery-based RESTMapper,
// under the operator's ServiceAccount (docs/security.md, "Limits").
package objectpatch
