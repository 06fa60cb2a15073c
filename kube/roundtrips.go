package kube

// Round trips of each install and upgrade that Helm would make and the
// client already knows the answer of (docs/performance.md).

import (
	"sync"
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
// Upgrade has just found absent (claimable: the snapshot of release
// records, or a read of the release's last record): Helm's own look for
// the name's history before it installs, one more list of release
// Secrets, is answered from that. Creating the first record stays the
// guard: one written meanwhile by another makes the install fail, and the
// retry reads again.
type knownAbsent struct {
	driver.Driver
	name string
}

func (k knownAbsent) Query(labels map[string]string) ([]*release.Release, error) {
	if len(labels) == 2 && labels["name"] == k.name && labels["owner"] == "helm" {
		return nil, driver.ErrReleaseNotFound
	}
	return k.Driver.Query(labels)
}
