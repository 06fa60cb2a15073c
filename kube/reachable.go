package kube

import (
	"sync"
	"time"

	helmkube "helm.sh/helm/v3/pkg/kube"
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
