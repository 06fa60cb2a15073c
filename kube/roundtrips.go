package kube

// Round trips of each install and upgrade that Helm would make and the
// client already knows the answer of (docs/performance.md).

import (
	"sync"
	"sync/atomic"
	"time"

	helmkube "helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// reachableTTL is how long a successful reachability check answers for
// the next ones.
const reachableTTL = 10 * time.Second

// reachableClient is Helm's kube client whose reachability check, a GET
// of the API server's version before every install and upgrade, is
// answered by the last successful one for reachableTTL (docs/performance.md:
// one round trip less in each module's Helm step). An API server lost
// meanwhile fails the install's first request instead, and a failed
// install or upgrade checks again (actionSetup.rediscover, prepare).
type reachableClient struct {
	*helmkube.Client
	now func() time.Time

	mu    sync.Mutex
	until time.Time
}

// IsReachable is Helm's check, answered from the last success while it is
// recent.
func (c *reachableClient) IsReachable() error {
	c.mu.Lock()
	recent := c.now().Before(c.until)
	c.mu.Unlock()
	if recent {
		return nil
	}
	return c.check()
}

// check asks the API server, and remembers a success.
func (c *reachableClient) check() error {
	if err := c.Client.IsReachable(); err != nil {
		return err
	}
	c.mu.Lock()
	c.until = c.now().Add(reachableTTL)
	c.mu.Unlock()
	return nil
}

// knownAbsent is the release storage driver of an install whose release
// Upgrade has read from the cluster and found absent, just before or
// ahead of its run beside its hooks (ReadAhead; not from the snapshot of
// release records, which may be its TTL old): Helm's own look for the
// name's history before it installs, one more list of release Secrets, is
// answered from that read.
type knownAbsent struct {
	driver.Driver
	name string
}

func (k knownAbsent) Query(labels map[string]string) ([]*release.Release, error) {
	if isHistoryOf(labels, k.name) {
		return nil, driver.ErrReleaseNotFound
	}
	return k.Driver.Query(labels)
}

// knownLast is the release storage driver of an upgrade whose release's
// last record Upgrade has read from the cluster, deployed, just before or
// ahead (ReadAhead; not from the snapshot of release records, which may
// be its TTL old): Helm's first look for the name's history
// (Releases.Last, one LIST of release Secrets) is answered with that
// record. Later looks (the
// history bound after the new record is written) read the cluster.
type knownLast struct {
	driver.Driver
	name string
	last *release.Release
	used atomic.Bool
}

// newKnownLast answers with a copy of last whose Info is its own: Helm
// marks the record it upgrades superseded in place, and the snapshot's
// record is read by others meanwhile.
func newKnownLast(d driver.Driver, last *release.Release) *knownLast {
	rel := *last
	if last.Info != nil {
		info := *last.Info
		rel.Info = &info
	}
	return &knownLast{Driver: d, name: last.Name, last: &rel}
}

func (k *knownLast) Query(labels map[string]string) ([]*release.Release, error) {
	if isHistoryOf(labels, k.name) && k.used.CompareAndSwap(false, true) {
		return []*release.Release{k.last}, nil
	}
	return k.Driver.Query(labels)
}

// isHistoryOf: a storage query is Helm's look for every record of release
// name (owner=helm, name=NAME; not its query for the deployed ones, which
// has a status too).
func isHistoryOf(labels map[string]string, name string) bool {
	return len(labels) == 2 && labels["name"] == name && labels["owner"] == "helm"
}
