package kube

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/client-go/rest"

	"github.com/addonops/addon-operator/internal/testenv/helmtest"
)

// counting counts the requests match says yes to.
type counting struct {
	next  http.RoundTripper
	match func(*http.Request) bool
	n     *atomic.Int32
}

func (c counting) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.match(r) {
		c.n.Add(1)
	}
	return c.next.RoundTrip(r)
}

// isVersion: a request for the API server's version.
func isVersion(r *http.Request) bool { return r.URL.Path == "/version" }

// Helm's reachability check before each install and upgrade is answered
// by the last successful one while it is recent: one version request for
// a module's install and its upgrades, not one each.
func TestHelmReachableOnce(t *testing.T) {
	t.Parallel()
	h, _, n := countingHelm(t, isVersion)
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

// isHistory: a list of the release demo's whole history (Helm's history
// query: owner=helm,name=NAME; not its query for the deployed records,
// which has a status too).
func isHistory(r *http.Request) bool {
	terms := strings.Split(r.URL.Query().Get("labelSelector"), ",")
	slices.Sort(terms)
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/secrets") && slices.Equal(terms, []string{"name=demo", "owner=helm"})
}

// An install reads the release's history once, for Upgrade's own check,
// not again for Helm's; a name taken meanwhile still fails the install.
func TestHelmInstallReadsHistoryOnce(t *testing.T) {
	t.Parallel()
	h, ns, n := countingHelm(t, isHistory)
	r := Release{Name: "demo", ChartDir: testChart(t, goodManifest), Values: map[string]any{"demo": map[string]any{"v": "1"}, "global": map[string]any{}}}
	if res, err := h.Upgrade(t.Context(), r); err != nil || res.Reason != "installed" {
		t.Fatalf("install: %+v, %v", res, err)
	}
	if got := n.Load(); got > 1 {
		t.Fatalf("%d lists of the release's records for one install, want at most 1", got)
	}
	// a snapshot (up to its TTL old) says absent, the release exists,
	// its first record removed by the history bound: Helm reads for
	// itself and refuses
	for i := range maxHistory + 1 {
		r.Values["demo"] = map[string]any{"v": fmt.Sprint(i + 2)}
		if _, err := h.Upgrade(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	other := newHelm(t, ns)
	other.snapshot.replace(nil, time.Now().Add(time.Minute))
	if _, err := other.Upgrade(t.Context(), r); err == nil {
		t.Fatal("an install over an existing release succeeded")
	}
}

// An upgrade reads the release's history only to bound it (maxHistory),
// not again for Helm's look for its last record; the bound still holds,
// and a revision written meanwhile by another still fails the upgrade.
func TestHelmUpgradeReadsHistoryOnce(t *testing.T) {
	t.Parallel()
	h, ns, n := countingHelm(t, isHistory)
	r := Release{Name: "demo", ChartDir: testChart(t, goodManifest), Values: map[string]any{"demo": map[string]any{"v": "0"}, "global": map[string]any{}}}
	if res, err := h.Upgrade(t.Context(), r); err != nil || res.Reason != "installed" {
		t.Fatalf("install: %+v, %v", res, err)
	}
	first, err := helmtest.Last(restCfg, ns, "demo")
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxHistory + 2 {
		n.Store(0)
		r.Values["demo"] = map[string]any{"v": fmt.Sprint(i + 1)}
		if res, err := h.Upgrade(t.Context(), r); err != nil || !res.Upgraded {
			t.Fatalf("upgrade %d: %+v, %v", i, res, err)
		}
		// Upgrade's own read (no snapshot here) and the history bound
		if got := n.Load(); got > 2 {
			t.Fatalf("upgrade %d: %d lists of the release's records, want at most 2", i, got)
		}
	}
	secrets, err := client.CoreV1().Secrets(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "owner=helm,name=demo"})
	if err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) > maxHistory {
		t.Fatalf("%d release records kept, want at most %d", len(secrets.Items), maxHistory)
	}
	// a stale snapshot (revision 1 as the last, whose successor the
	// history bound removed): Helm reads the last revision for itself
	other := newHelm(t, ns)
	other.snapshot.replace(map[string]*release.Release{"demo": first}, time.Now().Add(time.Minute))
	r.Values["demo"] = map[string]any{"v": "stale"}
	res, err := other.Upgrade(t.Context(), r)
	if err != nil || res.Revision != maxHistory+4 {
		t.Fatalf("an upgrade on a stale snapshot: %+v, %v; want revision %d", res, err, maxHistory+4)
	}
}

// countingHelm is a Helm client in a new namespace, with the count of its
// requests match says yes to.
func countingHelm(t *testing.T, match func(*http.Request) bool) (*Helm, string, *atomic.Int32) {
	t.Helper()
	ns := namespace(t)
	n := &atomic.Int32{}
	cfg := rest.CopyConfig(restCfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return counting{rt, match, n} }
	h, err := NewHelm(cfg, ns, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return h, ns, n
}
