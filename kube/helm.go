package kube

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	chartloader "helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	helmkube "helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Labels on every release record this operator writes.
const (
	// LabelManagedBy marks a release as this operator's; only such releases
	// are ever upgraded, uninstalled or purged.
	LabelManagedBy = "addonops.io/managed-by"
	ManagedByValue = "addon-operator"
	// LabelChecksum is a digest of the rendered manifests.
	LabelChecksum = "addonops.io/checksum"
	// LabelCommit is the git commit the release was deployed from.
	LabelCommit = "addonops.io/commit"
	// LabelMaintenance is "true" on a release left alone in maintenance
	// mode; the original addon-operator's key.
	LabelMaintenance = "maintenance.deckhouse.io/no-resource-reconciliation"
)

const (
	// maxHistory bounds the revisions kept per release.
	maxHistory = 5
	// maxCachedCharts bounds the chart cache.
	maxCachedCharts = 1000
)

// LabelOriginalChecksum is the storage label the original addon-operator
// writes on its releases; a release of a module's name that carries it is
// adopted (docs/operator.md, "Taking over from addon-operator").
const LabelOriginalChecksum = "moduleChecksum"

// ErrNotOurs says a release of that name exists but another tool owns it.
var ErrNotOurs = errors.New("release exists and is not managed by addon-operator; refusing to touch it")

// owned: a release of ours, or one the original addon-operator wrote.
func owned(rel *release.Release) bool {
	return rel.Labels[LabelManagedBy] == ManagedByValue || rel.Labels[LabelOriginalChecksum] != ""
}

// Release is what to install for one module.
type Release struct {
	Name     string // the module name
	ChartDir string
	// ChartHash identifies the chart's content, for the chart cache.
	ChartHash string
	Values    map[string]any
	// Key is the module's values key. The chart's own values.yaml is
	// Helm's defaults, as in the original addon-operator, except this key
	// and "global": those come whole from Values.
	Key string
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

// Helm installs, upgrades and removes module releases with helm.sh/helm/v3
// as a library, in one namespace.
type Helm struct {
	cfg       *action.Configuration
	getter    *restGetter
	namespace string
	logger    *slog.Logger

	prepMu   sync.Mutex
	prepared bool // see prepare

	mu     sync.Mutex
	charts map[string]*chart.Chart // by ChartDir + ChartHash
	// latest is the newest record of every release in the namespace, read in
	// one list by Releases and kept current by this client's own writes;
	// valid while fresh. Any failed write drops it.
	latest map[string]*release.Release
	fresh  bool
}

// NewHelm returns a Helm client for the namespace.
func NewHelm(restConfig *rest.Config, namespace string, logger *slog.Logger) (*Helm, error) {
	getter, err := newRESTGetter(restConfig, namespace)
	if err != nil {
		return nil, err
	}
	cfg := &action.Configuration{}
	debug := func(format string, v ...any) { logger.Debug(fmt.Sprintf(format, v...), "component", "helm") }
	if err := cfg.Init(getter, namespace, "secret", debug); err != nil {
		return nil, fmt.Errorf("init helm: %w", err)
	}
	// The kube client would take the namespace from a kubeconfig; there is
	// none when the config comes from the cluster, so set it.
	if kc, ok := cfg.KubeClient.(*helmkube.Client); ok {
		kc.Namespace = namespace
	}
	return &Helm{cfg: cfg, getter: getter, namespace: namespace, logger: logger, charts: map[string]*chart.Chart{}, latest: map[string]*release.Release{}}, nil
}

// RESTGetter gives Helm-style clients for the same cluster and namespace.
func (h *Helm) RESTGetter() genericclioptions.RESTClientGetter { return h.getter }

// chart loads (and caches) a module's chart. A module with templates/ and
// no Chart.yaml gets one made up from its name.
func (h *Helm) chart(r Release) (*chart.Chart, error) {
	key := r.ChartDir + "\x00" + r.ChartHash
	h.mu.Lock()
	c, ok := h.charts[key]
	h.mu.Unlock()
	if ok && r.ChartHash != "" {
		return c, nil
	}
	c, err := loadChart(r)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	if len(h.charts) >= maxCachedCharts {
		clear(h.charts) // charts of old trees go; the current ones reload once
	}
	h.charts[key] = c
	h.mu.Unlock()
	return c, nil
}

func loadChart(r Release) (*chart.Chart, error) {
	var c *chart.Chart
	var err error
	if _, statErr := os.Stat(filepath.Join(r.ChartDir, "Chart.yaml")); statErr == nil {
		c, err = chartloader.LoadDir(r.ChartDir)
	} else {
		c, err = loadTemplatesOnly(r.ChartDir, r.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", r.ChartDir, err)
	}
	// The module directory is the chart, so its values.yaml holds Helm's
	// defaults for subcharts and keys outside the module's section. The
	// module's section and "global" are left out: the operator hands Helm
	// them complete, and defaults would bring back keys a hook's patch
	// removed (docs/operator.md, "Helm releases").
	c.Values = maps.Clone(c.Values)
	delete(c.Values, "global")
	if r.Key != "" {
		delete(c.Values, r.Key)
	}
	if c.Values == nil {
		c.Values = map[string]any{}
	}
	return c, nil
}

func loadTemplatesOnly(dir, name string) (*chart.Chart, error) {
	files := []*chartloader.BufferedFile{{
		Name: "Chart.yaml",
		Data: fmt.Appendf(nil, "apiVersion: v2\nname: %s\nversion: 0.0.1\n", name),
	}}
	if data, err := os.ReadFile(filepath.Join(dir, "values.yaml")); err == nil {
		files = append(files, &chartloader.BufferedFile{Name: "values.yaml", Data: data})
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, sub := range []string{"templates", "charts", "crds"} {
		root := filepath.Join(dir, sub)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) && p == root {
				return filepath.SkipDir
			}
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			files = append(files, &chartloader.BufferedFile{Name: filepath.ToSlash(rel), Data: data})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return chartloader.LoadFiles(files)
}

// last returns the release's latest record, whether it exists, and
// ErrNotOurs when it exists and is neither ours nor the original's.
func (h *Helm) last(name string) (*release.Release, bool, error) {
	h.mu.Lock()
	rel, cached := h.latest[name]
	fresh := h.fresh
	h.mu.Unlock()
	if !fresh {
		var err error
		rel, err = h.cfg.Releases.Last(name)
		if errors.Is(err, driver.ErrReleaseNotFound) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("read release %s: %w", name, err)
		}
	} else if !cached {
		return nil, false, nil
	}
	if !owned(rel) {
		return rel, true, fmt.Errorf("release %s/%s: %w", h.namespace, name, ErrNotOurs)
	}
	return rel, true, nil
}

// Checksum renders the chart with the values (client-side) and digests the
// rendered manifests (hooks included). The values themselves are left out:
// every chart gets the global values, so a change to a value no template
// uses would otherwise upgrade every release without changing anything.
func (h *Helm) Checksum(ctx context.Context, r Release) (string, error) {
	c, err := h.chart(r)
	if err != nil {
		return "", err
	}
	manifest, err := render(ctx, c, r, h.namespace)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(manifest))
	// a label value holds 63 characters
	return hex.EncodeToString(sum[:])[:40], nil
}

// Render renders a module's chart with the values without a cluster: the
// manifests, then each Helm hook's, as Helm would apply them.
func Render(ctx context.Context, r Release, namespace string) (string, error) {
	c, err := loadChart(r)
	if err != nil {
		return "", err
	}
	return render(ctx, c, r, namespace)
}

func render(ctx context.Context, c *chart.Chart, r Release, namespace string) (string, error) {
	// ClientOnly replaces the configuration's kube client and release
	// storage with fakes, so rendering gets a configuration of its own.
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.DryRun, inst.ClientOnly, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = r.Name, namespace
	inst.IncludeCRDs = true
	rel, err := inst.RunWithContext(ctx, c, r.Values)
	if err != nil {
		return "", fmt.Errorf("render chart of %s: %w", r.Name, err)
	}
	var b strings.Builder
	b.WriteString(rel.Manifest)
	for _, hk := range rel.Hooks {
		fmt.Fprintf(&b, "\n---\n# Source: %s\n%s", hk.Path, hk.Manifest)
	}
	return b.String(), nil
}

// Upgrade installs or upgrades a module's release. It skips the upgrade
// when the deployed release has the same checksum and none of its
// resources is missing; it clears a release stuck in a pending state and
// removes a failed first install before trying again.
func (h *Helm) Upgrade(ctx context.Context, r Release) (Result, error) {
	sum, err := h.Checksum(ctx, r)
	if err != nil {
		return Result{}, err
	}
	last, exists, err := h.last(r.Name)
	if err != nil {
		return Result{}, err
	}
	if exists {
		if last, exists, err = h.repair(ctx, last); err != nil {
			return Result{}, err
		}
	}
	inMaintenance := exists && last.Labels[LabelMaintenance] == "true"
	if r.Maintenance && exists && last.Info.Status == release.StatusDeployed {
		if !inMaintenance {
			if err := h.label(last, LabelMaintenance, "true"); err != nil {
				return Result{}, err
			}
		}
		return Result{Reason: "maintenance", Revision: last.Version}, nil
	}
	if exists && !inMaintenance && last.Info.Status == release.StatusDeployed && last.Labels[LabelChecksum] == sum {
		absent, err := h.absent(last)
		if err != nil {
			return Result{}, err
		}
		if len(absent) == 0 {
			return Result{Reason: "unchanged", Revision: last.Version}, nil
		}
		h.logger.Info("release resources missing; upgrading", "module", r.Name, "absent", absent)
	}
	c, err := h.chart(r)
	if err != nil {
		return Result{}, err
	}
	if err := h.prepare(); err != nil {
		return Result{}, err
	}
	labels := map[string]string{LabelManagedBy: ManagedByValue, LabelChecksum: sum}
	if r.Commit != "" {
		labels[LabelCommit] = r.Commit
	}
	if r.Maintenance {
		labels[LabelMaintenance] = "true"
	}
	var rel *release.Release
	reason := "changed"
	if exists && last.Labels[LabelManagedBy] != ManagedByValue {
		// the original addon-operator's: upgraded in place, ours from now on
		reason = "adopted"
		h.logger.Info("adopting the original addon-operator's release", "module", r.Name, "revision", last.Version)
	}
	// An install or upgrade that started finishes even when ctx is
	// cancelled (shutdown, a lost Lease): Helm's own cancellation path
	// writes the release from a second goroutine while the upgrade still
	// does (a data race in helm v3.22), and an interrupted upgrade leaves a
	// pending revision behind. helmTimeout bounds it instead.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), helmTimeout)
	defer cancel()
	if !exists {
		inst := action.NewInstall(h.cfg)
		inst.ReleaseName, inst.Namespace, inst.Labels = r.Name, h.namespace, labels
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
		up := action.NewUpgrade(h.cfg)
		up.Namespace, up.Labels, up.MaxHistory = h.namespace, labels, maxHistory
		up.DisableOpenAPIValidation = true // as for install
		rel, err = up.RunWithContext(ctx, r.Name, c, r.Values)
	}
	if err != nil {
		h.invalidate()
		return Result{}, fmt.Errorf("helm %s %s: %w", map[bool]string{true: "upgrade", false: "install"}[exists], r.Name, err)
	}
	h.record(rel.Name, rel)
	return Result{Upgraded: true, Reason: reason, Revision: rel.Version}, nil
}

// label sets a label on a release's stored record, without a new revision.
func (h *Helm) label(rel *release.Release, key, value string) error {
	next := *rel
	next.Labels = maps.Clone(rel.Labels)
	if next.Labels == nil {
		next.Labels = map[string]string{}
	}
	next.Labels[key] = value
	if err := h.cfg.Releases.Update(&next); err != nil {
		h.invalidate()
		return fmt.Errorf("label release %s: %w", rel.Name, err)
	}
	h.record(next.Name, &next)
	return nil
}

// prepare fills in, once, before the first install or upgrade, what Helm
// sets up lazily without a lock in the shared configuration (the kube
// client's clientset, the cluster's capabilities): modules of one weight
// install at once.
func (h *Helm) prepare() error {
	h.prepMu.Lock()
	defer h.prepMu.Unlock()
	if h.prepared {
		return nil
	}
	if err := h.cfg.KubeClient.IsReachable(); err != nil {
		return fmt.Errorf("reach the cluster: %w", err)
	}
	dc, err := h.getter.ToDiscoveryClient()
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
	h.cfg.Capabilities = &chartutil.Capabilities{
		APIVersions: apiVersions,
		KubeVersion: chartutil.KubeVersion{Version: version.GitVersion, Major: version.Major, Minor: version.Minor},
		HelmVersion: chartutil.DefaultCapabilities.HelmVersion,
	}
	h.prepared = true
	return nil
}

// helmTimeout bounds one install or upgrade (Helm's own default).
const helmTimeout = 5 * time.Minute

// repair clears what would make an upgrade fail: a pending revision (left
// by a crash mid-operation) is deleted from storage; a release whose every
// revision failed (a failed first install) is uninstalled.
func (h *Helm) repair(ctx context.Context, last *release.Release) (*release.Release, bool, error) {
	name := last.Name
	if last.Info.Status.IsPending() {
		h.logger.Warn("release stuck in a pending state; clearing that revision", "module", name, "status", last.Info.Status, "revision", last.Version)
		h.invalidate()
		if _, err := h.cfg.Releases.Delete(name, last.Version); err != nil {
			return nil, false, fmt.Errorf("clear pending revision %d of %s: %w", last.Version, name, err)
		}
		next, exists, err := h.last(name)
		if err != nil || !exists {
			return nil, false, err
		}
		last = next
	}
	if last.Info.Status == release.StatusFailed {
		if _, err := h.cfg.Releases.Deployed(name); errors.Is(err, driver.ErrNoDeployedReleases) {
			h.logger.Warn("first install failed; removing it before trying again", "module", name)
			if _, err := h.uninstall(ctx, name); err != nil {
				return nil, false, err
			}
			return nil, false, nil
		}
	}
	return last, true, nil
}

// absent lists the release's resources that are missing from the cluster.
func (h *Helm) absent(rel *release.Release) ([]string, error) {
	resources, err := h.cfg.KubeClient.Build(bytes.NewBufferString(rel.Manifest), false)
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
func (h *Helm) AbsentResources(name string) ([]string, error) {
	rel, exists, err := h.last(name)
	if err != nil || !exists || rel.Info.Status != release.StatusDeployed || rel.Labels[LabelMaintenance] == "true" {
		return nil, err
	}
	return h.absent(rel)
}

// Uninstall removes a release of ours. It reports whether there was one; a
// release of that name that is not ours is an error and is left alone.
func (h *Helm) Uninstall(ctx context.Context, name string) (bool, error) {
	_, exists, err := h.last(name)
	if err != nil || !exists {
		return false, err
	}
	return h.uninstall(ctx, name)
}

func (h *Helm) uninstall(_ context.Context, name string) (bool, error) {
	un := action.NewUninstall(h.cfg)
	_, err := un.Run(name)
	h.record(name, nil)
	if err != nil {
		if errors.Is(err, driver.ErrReleaseNotFound) {
			return false, nil
		}
		h.invalidate()
		return false, fmt.Errorf("helm uninstall %s: %w", name, err)
	}
	return true, nil
}

// record notes this client's own write in the snapshot (nil: removed).
func (h *Helm) record(name string, rel *release.Release) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if rel == nil {
		delete(h.latest, name)
	} else {
		h.latest[name] = rel
	}
}

func (h *Helm) invalidate() {
	h.mu.Lock()
	h.fresh = false
	h.mu.Unlock()
}

// Has reports whether a release of that name exists that is ours or the
// original addon-operator's.
func (h *Helm) Has(name string) (bool, error) {
	_, exists, err := h.last(name)
	if errors.Is(err, ErrNotOurs) {
		return false, nil
	}
	return exists, err
}

// Releases lists the names of the releases of ours in the namespace. It
// reads every release record in one list and keeps the newest of each as
// the snapshot later calls use, so a module run costs no further reads.
// Releases of the original addon-operator are not listed: they are never
// purged, only adopted or deleted by the module of their name.
func (h *Helm) Releases() ([]string, error) {
	all, err := h.cfg.Releases.ListReleases()
	if err != nil {
		h.invalidate()
		return nil, fmt.Errorf("list releases: %w", err)
	}
	latest := map[string]*release.Release{}
	for _, r := range all {
		if prev, ok := latest[r.Name]; !ok || r.Version > prev.Version {
			latest[r.Name] = r
		}
	}
	var names []string
	for name, r := range latest {
		if r.Labels[LabelManagedBy] == ManagedByValue {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	h.mu.Lock()
	h.latest, h.fresh = latest, true
	h.mu.Unlock()
	return names, nil
}

// Commit is the commit recorded on a release of ours ("" when none).
func (h *Helm) Commit(name string) (string, error) {
	rel, exists, err := h.last(name)
	if err != nil || !exists {
		return "", err
	}
	return rel.Labels[LabelCommit], nil
}

// restGetter gives Helm clients for a rest.Config, with one discovery cache.
type restGetter struct {
	config    *rest.Config
	namespace string
	disc      discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
}

var _ genericclioptions.RESTClientGetter = (*restGetter)(nil)

func newRESTGetter(cfg *rest.Config, namespace string) (*restGetter, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(disc), disc, nil)
	return &restGetter{config: cfg, namespace: namespace, disc: disc, mapper: mapper}, nil
}

func (g *restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.config), nil }
func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.disc, nil
}
func (g *restGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.mapper, nil }
func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), &clientcmd.ConfigOverrides{
		Context: clientcmdapi.Context{Namespace: g.namespace},
	})
}
