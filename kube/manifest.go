package kube

import (
	"context"
	"os"
	"path/filepath"

	helmkube "helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
)

// Manifest is the manifest of a module's deployed release of ours: what
// the chart rendered when Helm last applied it, which drift checks compare
// the cluster with (docs/operator.md, "Drift"). ok is false when there is
// none (no release, another tool's, or a revision not deployed).
func (h *Helm) Manifest(ctx context.Context, name string) (string, bool, error) {
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	rel, exists, err := h.last(name)
	if err != nil || !exists || rel.Info == nil || rel.Info.Status != release.StatusDeployed {
		return "", false, err
	}
	return rel.Manifest, true, nil
}

// FieldManager is the field manager Helm writes release objects with: the
// one set in Helm's kube package, else the program's base name (Helm's
// rule). Drift checks apply as it, so a correction's fields stay Helm's.
func FieldManager() string {
	if helmkube.ManagedFieldsManager != "" {
		return helmkube.ManagedFieldsManager
	}
	return filepath.Base(os.Args[0])
}
