package kube

import (
	helmkube "helm.sh/helm/v3/pkg/kube"
	"k8s.io/client-go/rest"
)

// Field managers: each part of the operator that writes to the cluster
// writes under a name of its own, so the API server's managedFields say
// which part set a field, and drift checks tell the operator's own changes
// (the registrar's conversion settings, hooks' object patches) from hand
// edits (docs/security.md, "Field managers"; docs/operator.md, "Drift").
const (
	// FieldManagerHelm is Helm's installs, upgrades and release records.
	FieldManagerHelm = "addon-operator-helm"
	// FieldManagerDrift is the drift checks' dry-runs and corrections.
	FieldManagerDrift = "addon-operator-drift"
	// FieldManagerWebhooks is the webhook registrar's configurations and
	// CRD conversion settings.
	FieldManagerWebhooks = "addon-operator-webhooks"
	// FieldManagerObjectPatch is hooks' object patches
	// ($KUBERNETES_PATCH_PATH).
	FieldManagerObjectPatch = "addon-operator-objectpatch"
	// FieldManagerCRDs is the CRDs of modules' crds/ directories.
	FieldManagerCRDs = "addon-operator-crds"
	// FieldManagerConfigMap is the values ConfigMap and the source
	// ConfigMap (config values, settings commands, pinned revisions).
	FieldManagerConfigMap = "addon-operator-configmap"
	// FieldManagerEvents is the Events the operator records.
	FieldManagerEvents = "addon-operator-events"
	// FieldManagerLeader is the leader election's Lease.
	FieldManagerLeader = "addon-operator-leader"
	// FieldManagerLegacy is the one name every write of earlier versions
	// had (the user agent; Helm's from the program name): what it owns was
	// written by the operator, never by hand.
	FieldManagerLegacy = "addon-operator"
)

// OwnFieldManagers are the operator's parts whose changes to a release's
// objects are not drift: the registrar's, object patches', and what
// earlier versions wrote under one name.
var OwnFieldManagers = []string{FieldManagerWebhooks, FieldManagerObjectPatch, FieldManagerLegacy}

// Helm's kube client takes its field manager from a package variable, not
// from a client (helm.sh/helm/v3/pkg/kube, getManagedFieldsManager); it is
// set once, before any client exists, so no write races it.
func init() {
	if helmkube.ManagedFieldsManager == "" {
		helmkube.ManagedFieldsManager = FieldManagerHelm
	}
}

// WithUserAgent is a copy of cfg whose user agent is manager: a write
// without an explicit field manager (Helm's release records, client-go's
// leader election) is recorded under the user agent's name.
func WithUserAgent(cfg *rest.Config, manager string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.UserAgent = manager
	return c
}
