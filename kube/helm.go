package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	helmkube "helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
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

// LabelOriginalChecksum is the storage label the original addon-operator
// writes on its releases; a release of a module's name that carries it is
// adopted (docs/operator.md, "Taking over from addon-operator").
const LabelOriginalChecksum = "moduleChecksum"

// ErrNotOurs says a release of that name exists but another tool, or
// another instance of this operator, owns it.
var ErrNotOurs = errors.New("release exists and is not managed by addon-operator; refusing to touch it")

// Helm installs, upgrades and removes module releases with helm.sh/helm/v3
// as a library, in one namespace. It decides what to do with a release
// (ownership, repair, skip or upgrade); the parts it owns keep state of
// their own: releaseSnapshot (the newest record of every release),
// chartCache (loaded charts), renderedSums (the last render's checksum),
// readsAhead (ReadAhead) and actionSetup (the cluster's capabilities for
// Helm's actions).
type Helm struct {
	cfg       *action.Configuration
	getter    *restGetter
	namespace string
	logger    *slog.Logger
	instance  string        // the instance ID on our releases (LabelInstance)
	pending   time.Duration // a younger pending revision is left alone (repair)
	now       func() time.Time

	setup    *actionSetup
	charts   *chartCache
	snapshot *releaseSnapshot
	sums     *renderedSums
	ahead    *readsAhead // ReadAhead
	presence presence    // SetPresence
	// secrets reads the release records for the snapshot (listHeads)
	secrets corev1client.SecretInterface
}

// releaseSnapshot is the newest record of every release in the namespace,
// as a head (headOf: no chart files, no values), read in one list by
// Releases and kept current by the client's own writes. A listed record,
// and the absence of a release the list did not have, is valid until the
// list's TTL ends; a record the client wrote, or a release it removed,
// for a TTL from that write: another tool may change releases meanwhile,
// and ownership is decided on it. A converge of 1,000 modules outlasts
// one TTL, and its module runs still read their own installs from here
// (docs/performance.md). Any failed write drops it.
type releaseSnapshot struct {
	mu          sync.Mutex
	latest      map[string]snapshotEntry
	listedUntil time.Time
}

// snapshotEntry is one release's record (nil: removed by the client) and
// until when it answers.
type snapshotEntry struct {
	rel   *release.Release
	until time.Time
}

// get is the snapshot's record of name at now: cached says the snapshot
// has one, fresh that the snapshot answers for the release at all.
func (s *releaseSnapshot) get(name string, now time.Time) (rel *release.Release, cached, fresh bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.latest[name]; ok {
		return e.rel, e.rel != nil, now.Before(e.until)
	}
	return nil, false, now.Before(s.listedUntil)
}

// replace makes latest, heads (listHeads), the snapshot, valid until
// until.
func (s *releaseSnapshot) replace(latest map[string]*release.Release, until time.Time) {
	entries := make(map[string]snapshotEntry, len(latest))
	for name, rel := range latest {
		entries[name] = snapshotEntry{rel: rel, until: until}
	}
	s.mu.Lock()
	s.latest, s.listedUntil = entries, until
	s.mu.Unlock()
}

// record notes the client's own write at now in the snapshot (nil:
// removed).
func (s *releaseSnapshot) record(name string, rel *release.Release, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latest[name] = snapshotEntry{rel: headOf(rel), until: now.Add(snapshotTTL)}
}

// invalidate drops the snapshot: the next read asks the API server.
func (s *releaseSnapshot) invalidate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listedUntil = time.Time{}
	for name, e := range s.latest {
		e.until = time.Time{}
		s.latest[name] = e
	}
}

// snapshotTTL is how long a Releases list answers for single releases: a
// reload's module runs, not a run hours later.
const snapshotTTL = 30 * time.Second

// NewHelm returns a Helm client for the namespace.
func NewHelm(restConfig *rest.Config, namespace string, logger *slog.Logger, opts ...Option) (*Helm, error) {
	o := newOptions(namespace, opts)
	// the kube client writes release objects as FieldManagerHelm (see
	// init); its release records are written under the user agent's name
	getter, err := newRESTGetter(WithUserAgent(restConfig, FieldManagerHelm), namespace)
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
		cfg.KubeClient = &reachableClient{Client: kc, now: time.Now}
	}
	cs, err := kubernetes.NewForConfig(getter.config)
	if err != nil {
		return nil, fmt.Errorf("init helm: %w", err)
	}
	secrets := cs.CoreV1().Secrets(namespace)
	cfg.Releases.Driver = &recordWriter{Driver: cfg.Releases.Driver, secrets: secrets, now: time.Now}
	return &Helm{cfg: cfg, getter: getter, namespace: namespace, logger: logger, now: time.Now,
		secrets:  secrets,
		instance: o.instance, pending: o.pendingGrace,
		setup:    &actionSetup{cfg: cfg, getter: getter},
		charts:   &chartCache{charts: map[string]*chart.Chart{}},
		snapshot: &releaseSnapshot{latest: map[string]snapshotEntry{}},
		sums:     &renderedSums{last: map[string]renderedSum{}},
		ahead:    &readsAhead{reads: map[string]*readAhead{}},
	}, nil
}

// last returns the release's latest record, whether it exists, whether
// the snapshot answered (its record is then a head: headOf), and
// ErrNotOurs when it exists and this instance may not touch it: another
// tool's, or another instance's.
func (h *Helm) last(name string) (rel *release.Release, exists, fromSnapshot bool, err error) {
	rel, cached, fresh := h.snapshot.get(name, h.now())
	if !fresh {
		if rel, err = readLast(h.cfg.Releases, name); err != nil || rel == nil {
			return nil, false, false, err
		}
	} else if !cached {
		return nil, false, true, nil
	}
	return rel, true, fresh, refusal(rel, h.instance, h.namespace)
}

// refusal is ErrNotOurs (notOurs) when rel is another tool's or another
// instance's, else nil.
func refusal(rel *release.Release, instance, namespace string) error {
	if o := ownerOf(rel, instance); o == ownedByOther || o == ownedByInstance {
		return notOurs(rel, namespace, instance)
	}
	return nil
}

// claimable is last for a write that may take a release over. With
// ahead (Upgrade's), it is answered by the release's read made ahead
// (ReadAhead) when there is one to take: a read of the cluster
// (fromSnapshot false), so Helm's own look at the history can be answered
// from it (roundtrips.go). One that shows the release unlabelled for an
// instance (ours of an earlier version, or the original's) is read again,
// since another instance may have claimed it since.
func (h *Helm) claimable(ctx context.Context, name string, ahead bool) (rel *release.Release, exists, fromSnapshot bool, err error) {
	taken := false
	if ahead {
		rel, taken, err = h.ahead.take(ctx, name, h.now)
	}
	switch {
	case err != nil:
		return nil, false, false, err
	case taken:
		exists = rel != nil
		if exists {
			err = refusal(rel, h.instance, h.namespace)
		}
	default:
		rel, exists, fromSnapshot, err = h.last(name)
	}
	if err != nil || !exists {
		return rel, exists, fromSnapshot, err
	}
	if o := ownerOf(rel, h.instance); o == ownedLegacy || o == ownedByOriginal {
		h.snapshot.invalidate()
		return h.last(name)
	}
	return rel, exists, fromSnapshot, nil
}

// Purge removes a release whose module is gone, only when it carries our
// label and this instance's: the original addon-operator's releases,
// unlabelled ones of an earlier version, other instances' and other
// tools' are left alone. It reports whether it removed one.
func (h *Helm) Purge(ctx context.Context, name string) (bool, error) {
	rel, exists, _, err := h.last(name)
	if errors.Is(err, ErrNotOurs) || (exists && ownerOf(rel, h.instance) != ownedByUs) {
		h.logger.Info("release of a removed module left alone: not labelled as this instance's", "module", name, "instance", h.instance)
		return false, nil
	}
	if err != nil || !exists {
		return false, err
	}
	return h.uninstall(ctx, name)
}

// Uninstall removes a module's release: this instance's, an unlabelled one
// of an earlier version, or the original addon-operator's. It reports
// whether there was one; a release of that name that another tool or
// instance owns is an error and is left alone.
func (h *Helm) Uninstall(ctx context.Context, name string) (bool, error) {
	_, exists, _, err := h.claimable(ctx, name, false)
	if err != nil || !exists {
		return false, err
	}
	return h.uninstall(ctx, name)
}

func (h *Helm) uninstall(_ context.Context, name string) (bool, error) {
	un := action.NewUninstall(h.cfg)
	_, err := un.Run(name)
	h.snapshot.record(name, nil, h.now())
	if err != nil {
		if errors.Is(err, driver.ErrReleaseNotFound) {
			return false, nil
		}
		h.snapshot.invalidate()
		return false, fmt.Errorf("helm uninstall %s: %w", name, err)
	}
	return true, nil
}

// Has reports whether a release of that name exists that this instance
// may delete (see Uninstall).
func (h *Helm) Has(ctx context.Context, name string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	_, exists, _, err := h.last(name)
	if errors.Is(err, ErrNotOurs) {
		return false, nil
	}
	return exists, err
}

// Releases lists the names of this instance's releases in the namespace.
// It reads every release record (a page at a time) and keeps the newest of each
// as the snapshot later calls use, so a module run costs no further reads.
// Releases of the original addon-operator, of an earlier version without
// the instance label, and of other instances are not listed: they are
// never purged, only adopted or deleted by the module of their name.
func (h *Helm) Releases(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	all, err := listHeads(ctx, h.secrets, headsPage)
	if err != nil {
		h.snapshot.invalidate()
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
		if ownerOf(r, h.instance) == ownedByUs {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	h.snapshot.replace(latest, h.now().Add(snapshotTTL))
	return names, nil
}
