package kube

import (
	"context"

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
	rel, exists, _, err := h.last(name)
	if err != nil || !exists || rel.Info == nil || rel.Info.Status != release.StatusDeployed {
		return "", false, err
	}
	return rel.Manifest, true, nil
}
