package kube

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/client-go/discovery"

	"github.com/addonops/addon-operator/internal/steptime"
)

// Release is what to install for one module.
type Release struct {
	Name     string // the module name
	ChartDir string
	// ChartHash identifies the chart's content, for the chart cache.
	ChartHash string
	// Files, when set, is the chart read from the tree as the loader reads
	// it (loader.Model.ChartFS: a tree root alias mapped), in place of
	// ChartDir's files; ChartDir still names it.
	Files  fs.FS
	Values map[string]any
	// Key is the module's values key. The chart's own values.yaml is
	// Helm's defaults, as in the original addon-operator, except this key
	// and "global": those come whole from Values.
	Key string
	// Exclude are files of ChartDir (slash-separated, relative) left out
	// of the chart: a module's batch hook executables.
	Exclude []string
	// Commit is recorded on the release (LabelCommit) when set.
	Commit string
	// Maintenance leaves an existing release as it is (no upgrade, no
	// healing), only labelled LabelMaintenance; a release without it that
	// carries the label is upgraded once, whatever its checksum.
	Maintenance bool
}

// Result says what Upgrade did.
type Result struct {
	Upgraded bool
	// Reason says why it upgraded or skipped.
	Reason   string
	Revision int
}

// maxHistory bounds the revisions kept per release.
const maxHistory = 5

// Upgrade installs or upgrades a module's release. It skips the upgrade
// when the deployed release has the same checksum and none of its
// resources is missing; it clears a release stuck in a pending state and
// removes a failed first install before trying again.
func (h *Helm) Upgrade(ctx context.Context, r Release) (Result, error) {
	sum, err := h.sums.checksum(ctx, r, h.namespace, h.charts)
	if err != nil {
		return Result{}, err
	}
	steptime.Mark(ctx, steptime.HelmRender)
	// read from the cluster (ahead, beside the module's hooks: ReadAhead;
	// or now, with no fresh snapshot of release records): Helm's own read
	// of the release's history, a moment later, can be answered from it
	// (roundtrips.go); a snapshot's answer may be up to its TTL old, and
	// Helm reads for itself
	last, exists, fromSnapshot, err := h.claimable(ctx, r.Name, true)
	if err != nil {
		return Result{}, err
	}
	// maintenance leaves the release as it is, a pending or failed one
	// too: no repair (docs/operator.md, "Maintenance mode")
	if exists && !r.Maintenance {
		if last, exists, err = h.repair(ctx, last); err != nil {
			return Result{}, err
		}
	}
	steptime.Mark(ctx, steptime.HelmRelease)
	inMaintenance := exists && last.Labels[LabelMaintenance] == "true"
	// a release of ours from before instances were labelled is claimed in
	// place by the instance whose module it is (docs/operator.md)
	legacy := exists && ownerOf(last, h.instance) == ownedLegacy
	if r.Maintenance && exists {
		if !inMaintenance || legacy {
			if err := h.label(last, map[string]string{LabelMaintenance: "true"}); err != nil {
				return Result{}, err
			}
			steptime.Mark(ctx, steptime.HelmLabel)
		}
		return Result{Reason: "maintenance", Revision: last.Version}, nil
	}
	if exists && !inMaintenance && last.Info.Status == release.StatusDeployed && last.Labels[LabelChecksum] == sum {
		// the health watches know, or one GET per object
		var absent []string
		if !h.presence.allPresent(r.Name, last.Version) {
			if absent, err = absentResources(h.cfg.KubeClient, last); err != nil {
				return Result{}, err
			}
		}
		steptime.Mark(ctx, steptime.HelmAbsent)
		if len(absent) == 0 {
			if legacy {
				if err := h.label(last, nil); err != nil {
					return Result{}, err
				}
				h.logger.Info("release claimed for this instance", "module", r.Name, "instance", h.instance, "revision", last.Version)
				steptime.Mark(ctx, steptime.HelmLabel)
			}
			return Result{Reason: "unchanged", Revision: last.Version}, nil
		}
		h.logger.Info("release resources missing; upgrading", "module", r.Name, "absent", absent)
	}
	c, err := h.charts.load(r)
	if err != nil {
		return Result{}, err
	}
	cfg, err := h.setup.config()
	if err != nil {
		return Result{}, err
	}
	labels := map[string]string{LabelManagedBy: ManagedByValue, LabelInstance: h.instance, LabelChecksum: sum}
	if r.Commit != "" {
		labels[LabelCommit] = r.Commit
	}
	if r.Maintenance {
		labels[LabelMaintenance] = "true"
	}
	var rel *release.Release
	reason := "changed"
	if exists && (legacy || last.Labels[LabelManagedBy] != ManagedByValue) {
		// the original addon-operator's, or ours from before instances were
		// labelled: upgraded in place, this instance's from now on
		reason = "adopted"
		h.logger.Info("adopting a release", "module", r.Name, "revision", last.Version, "original", !legacy, "instance", h.instance)
	}
	// An install or upgrade that started finishes even when ctx is
	// cancelled (shutdown): Helm's own cancellation path writes the release
	// from a second goroutine while the upgrade still does (a data race in
	// helm v3.22), and an interrupted upgrade leaves a pending revision
	// behind. helmTimeout bounds it instead. A lost Lease does not wait for
	// it: Leader.Run returns and the process ends (docs/operator.md,
	// "Leader election").
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), helmTimeout)
	defer cancel()
	if !exists {
		if !fromSnapshot {
			cfg.Releases.Driver = knownAbsent{Driver: cfg.Releases.Driver, name: r.Name}
		}
		inst := action.NewInstall(cfg)
		inst.ReleaseName, inst.Namespace, inst.Labels = r.Name, h.namespace, labels
		// chart hooks' waits too (without it a hook Job that never
		// completes keeps the install's goroutine for good)
		inst.Timeout = helmTimeout
		// Helm's client-side validation fetches and parses the API server's
		// whole OpenAPI document on every install and upgrade (most of the
		// operator's CPU in a converge); the API server validates anyway.
		inst.DisableOpenAPIValidation = true
		// crds/ is applied before the module runs (CRDs), as the original does
		inst.SkipCRDs = true
		rel, err = inst.RunWithContext(ctx, c, r.Values)
		reason = "installed"
	} else {
		// Helm merges the previous revision's labels into the new one's;
		// "null" removes one: a commit label from a previous revision, the
		// maintenance label after maintenance, the original's label
		for _, k := range []string{LabelCommit, LabelMaintenance, LabelOriginalChecksum} {
			if _, ok := labels[k]; !ok {
				labels[k] = "null"
			}
		}
		if !fromSnapshot && last.Info != nil && last.Info.Status == release.StatusDeployed {
			cfg.Releases.Driver = newKnownLast(cfg.Releases.Driver, last)
		}
		up := action.NewUpgrade(cfg)
		up.Namespace, up.Labels, up.MaxHistory, up.Timeout = h.namespace, labels, maxHistory, helmTimeout
		up.DisableOpenAPIValidation = true // as for install
		rel, err = up.RunWithContext(ctx, r.Name, c, r.Values)
	}
	if err != nil {
		h.snapshot.invalidate()
		// the API may have gained kinds since discovery was read (a
		// module's CRDs): the retry reads it again
		h.setup.rediscover()
		return Result{}, fmt.Errorf("helm %s %s: %w", map[bool]string{true: "upgrade", false: "install"}[exists], r.Name, err)
	}
	h.snapshot.record(rel.Name, rel, h.now())
	steptime.Mark(ctx, steptime.HelmApply)
	return Result{Upgraded: true, Reason: reason, Revision: rel.Version}, nil
}

// label sets labels on a release's stored record, without a new revision,
// and this instance's label with them.
func (h *Helm) label(rel *release.Release, set map[string]string) error {
	// rel may be a head of the snapshot: the write is of the whole record
	full, err := h.cfg.Releases.Get(rel.Name, rel.Version)
	if err != nil {
		h.snapshot.invalidate()
		return fmt.Errorf("label release %s: %w", rel.Name, err)
	}
	next := *full
	next.Labels = maps.Clone(full.Labels)
	if next.Labels == nil {
		next.Labels = map[string]string{}
	}
	maps.Copy(next.Labels, set)
	next.Labels[LabelInstance] = h.instance
	if err := h.cfg.Releases.Update(&next); err != nil {
		h.snapshot.invalidate()
		return fmt.Errorf("label release %s: %w", rel.Name, err)
	}
	h.snapshot.record(next.Name, &next, h.now())
	return nil
}

// actionSetup fills in, once and again after rediscover, what Helm would
// set up lazily without a lock in the configuration it shares with Helm.
type actionSetup struct {
	cfg    *action.Configuration
	getter *restGetter

	mu       sync.Mutex
	prepared bool // see config
}

// config returns the configuration for one install or upgrade: a
// copy of the shared one with storage of its own, since Helm's actions
// write into the configuration they get (an upgrade sets its storage's
// MaxHistory) and modules of one weight install at once. Before the first
// (and after rediscover), it fills in what Helm would set up lazily
// without a lock: the kube client's clientset and the cluster's
// capabilities.
func (a *actionSetup) config() (*action.Configuration, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.prepared {
		if err := a.prepare(); err != nil {
			return nil, err
		}
		a.prepared = true
	}
	c := *a.cfg
	st := *a.cfg.Releases
	c.Releases = &st
	return &c, nil
}

// rediscover makes the next install or upgrade read the API's discovery
// and capabilities again: the API may have gained kinds (a module's CRDs).
func (a *actionSetup) rediscover() {
	a.getter.refresh()
	a.mu.Lock()
	a.prepared = false
	a.mu.Unlock()
}

// prepare reads what config fills in; under mu.
func (a *actionSetup) prepare() error {
	reach := a.cfg.KubeClient.IsReachable
	if rc, ok := a.cfg.KubeClient.(*reachableClient); ok {
		reach = rc.check // a fresh look, as at start and after a failure
	}
	if err := reach(); err != nil {
		return fmt.Errorf("reach the cluster: %w", err)
	}
	dc, err := a.getter.ToDiscoveryClient()
	if err != nil {
		return err
	}
	// as Helm does: a fresh view of the API, once
	dc.Invalidate()
	version, err := dc.ServerVersion()
	if err != nil {
		return fmt.Errorf("read the Kubernetes version: %w", err)
	}
	apiVersions, err := action.GetVersionSet(dc)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return fmt.Errorf("read the API versions: %w", err)
	}
	a.cfg.Capabilities = &chartutil.Capabilities{
		APIVersions: apiVersions,
		KubeVersion: chartutil.KubeVersion{Version: version.GitVersion, Major: version.Major, Minor: version.Minor},
		HelmVersion: chartutil.DefaultCapabilities.HelmVersion,
	}
	return nil
}

// helmTimeout bounds one install or upgrade (Helm's own default).
const helmTimeout = 5 * time.Minute
