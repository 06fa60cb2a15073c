package kube

import (
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
)

// countVersion counts the requests for the API server's version.
type countVersion struct {
	next http.RoundTripper
	n    *atomic.Int32
}

func (c countVersion) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == "/version" {
		c.n.Add(1)
	}
	return c.next.RoundTrip(r)
}

// Helm's reachability check before each install and upgrade is answered
// by the last successful one while it is recent: one version request for
// a module's install and its upgrades, not one each.
func TestHelmReachableOnce(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	var n atomic.Int32
	cfg := rest.CopyConfig(restCfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countVersion{rt, &n} }
	h, err := NewHelm(cfg, ns, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	r := Release{Name: "demo", ChartDir: testChart(t, goodManifest), Values: map[string]any{"demo": map[string]any{"v": "0"}, "global": map[string]any{}}}
	for _, v := range []string{"1", "2", "3"} {
		r.Values["demo"] = map[string]any{"v": v}
		if res, err := h.Upgrade(t.Context(), r); err != nil || !res.Upgraded {
			t.Fatalf("v=%s: %+v, %v", v, res, err)
		}
	}
	// the first install prepares the client (one check, and discovery's
	// own version read); the upgrades ask nothing more
	if got := n.Load(); got > 2 {
		t.Fatalf("%d version requests for an install and two upgrades, want at most 2", got)
	}
}
