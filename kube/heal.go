package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	helmkube "helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// repair clears what would make an upgrade fail: a pending revision (left
// by a crash mid-operation) is deleted from storage once it is older than
// the Helm timeout plus the lease duration; a release whose every revision
// failed (a failed first install) is uninstalled.
func (h *Helm) repair(ctx context.Context, last *release.Release) (*release.Release, bool, error) {
	name := last.Name
	if last.Info.Status.IsPending() {
		// a leader that lost its Lease may still be writing a young one
		// (docs/operator.md, "Leader election"): the task is retried
		if age := h.now().Sub(pendingSince(last)); age < h.pending {
			return nil, false, fmt.Errorf("release %s: revision %d is %s, started %s ago: another operator may still be writing it; it is cleared once %s old",
				name, last.Version, last.Info.Status, age.Round(time.Second), h.pending)
		}
		h.logger.Warn("release stuck in a pending state; clearing that revision", "module", name, "status", last.Info.Status, "revision", last.Version)
		h.snapshot.invalidate()
		if _, err := h.cfg.Releases.Delete(name, last.Version); err != nil {
			return nil, false, fmt.Errorf("clear pending revision %d of %s: %w", last.Version, name, err)
		}
		next, exists, _, err := h.last(name)
		if err != nil || !exists {
			return nil, false, err
		}
		last = next
	}
	if last.Info.Status == release.StatusFailed {
		_, err := h.cfg.Releases.Deployed(name)
		switch {
		case errors.Is(err, driver.ErrNoDeployedReleases):
			h.logger.Warn("first install failed; removing it before trying again", "module", name)
			if _, err := h.uninstall(ctx, name); err != nil {
				return nil, false, err
			}
			return nil, false, nil
		case err != nil:
			return nil, false, fmt.Errorf("read the deployed revision of %s: %w", name, err)
		}
	}
	return last, true, nil
}

// absentResources lists the release's resources that are missing from
// the cluster, read through kc one by one.
func absentResources(kc helmkube.Interface, rel *release.Release) ([]string, error) {
	resources, err := kc.Build(bytes.NewBufferString(rel.Manifest), false)
	if err != nil {
		return nil, fmt.Errorf("read resources of release %s: %w", rel.Name, err)
	}
	var missing []string
	for _, info := range resources {
		if err := info.Get(); err != nil {
			if apierrors.IsNotFound(err) {
				missing = append(missing, info.Mapping.GroupVersionKind.Kind+"/"+info.Name)
				continue
			}
			return nil, fmt.Errorf("get %s/%s of release %s: %w", info.Mapping.GroupVersionKind.Kind, info.Name, rel.Name, err)
		}
	}
	return missing, nil
}

// AbsentResources lists the missing resources of a deployed release of ours
// (none when it has no release, or it is in maintenance).
func (h *Helm) AbsentResources(ctx context.Context, name string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rel, exists, _, err := h.last(name)
	if err != nil || !exists || rel.Info.Status != release.StatusDeployed || rel.Labels[LabelMaintenance] == "true" {
		return nil, err
	}
	return absentResources(h.cfg.KubeClient, rel)
}

// pendingSince is when a pending revision was written: Helm stamps
// LastDeployed when it creates the record.
func pendingSince(rel *release.Release) time.Time {
	if rel.Info == nil {
		return time.Time{}
	}
	return rel.Info.LastDeployed.Time
}
