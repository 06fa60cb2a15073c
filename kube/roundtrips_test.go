package kube

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/release"

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

// countHistory counts the lists of a release's records (Helm's history
// query: owner=helm,name=NAME).
type countHistory struct {
	next http.RoundTripper
	n    *atomic.Int32
}

func (c countHistory) RoundTrip(r *http.Request) (*http.Response, error) {
	sel := r.URL.Query().Get("labelSelector")
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/secrets") && strings.Contains(sel, "name=demo") {
		c.n.Add(1)
	}
	return c.next.RoundTrip(r)
}

// An install reads the release's history once, for Upgrade's own check,
// not again for Helm's; a name taken meanwhile still fails the install.
func TestHelmInstallReadsHistoryOnce(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	var n atomic.Int32
	cfg := rest.CopyConfig(restCfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countHistory{rt, &n} }
	h, err := NewHelm(cfg, ns, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	r := Release{Name: "demo", ChartDir: testChart(t, goodManifest), Values: map[string]any{"demo": map[string]any{"v": "1"}, "global": map[string]any{}}}
	if res, err := h.Upgrade(t.Context(), r); err != nil || res.Reason != "installed" {
		t.Fatalf("install: %+v, %v", res, err)
	}
	if got := n.Load(); got > 1 {
		t.Fatalf("%d lists of the release's records for one install, want at most 1", got)
	}
	// the snapshot says absent, the record exists: Create refuses
	other := newHelm(t, ns)
	other.snapshot.latest, other.snapshot.freshUntil = map[string]*release.Release{}, time.Now().Add(time.Minute)
	if _, err := other.Upgrade(t.Context(), r); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("an install over an existing record: %v, want it refused", err)
	}
}
