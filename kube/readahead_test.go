package kube

import (
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addon-operator/internal/testenv/helmtest"
)

// readAheadWait makes h read name ahead and waits for the read to end,
// leaving it to take.
func readAheadWait(t *testing.T, h *Helm, name string) {
	t.Helper()
	h.ReadAhead(name)
	h.ahead.mu.Lock()
	r := h.ahead.reads[name]
	h.ahead.mu.Unlock()
	if r == nil {
		t.Fatalf("no read ahead of %s", name)
	}
	<-r.done
}

// A read made ahead of the Helm step stands for Upgrade's and Helm's own
// reads of the release's history while it is young; an old one is read
// again; a release the snapshot has is not read; and a release another
// writer installed after the read still fails the install, touching none
// of its objects.
func TestReadAhead(t *testing.T) {
	t.Parallel()
	values := func(v string) map[string]any {
		return map[string]any{"demo": map[string]any{"v": v}, "global": map[string]any{}}
	}
	chartDir := testChart(t, goodManifest)
	// a reload's snapshot: no release of the name
	reloaded := func(h *Helm) { h.snapshot.replace(nil, time.Now().Add(time.Minute)) }
	install := func(t *testing.T, h *Helm, v string) {
		t.Helper()
		if res, err := h.Upgrade(t.Context(), Release{Name: "demo", ChartDir: chartDir, Values: values(v)}); err != nil || res.Reason != "installed" {
			t.Fatalf("install with v=%s: %+v, %v", v, res, err)
		}
	}

	t.Run("young", func(t *testing.T) {
		t.Parallel()
		h, _, n := countingHelm(t, isHistory)
		reloaded(h)
		readAheadWait(t, h, "demo")
		if got := n.Load(); got != 1 {
			t.Fatalf("%d lists of the release's records ahead, want 1", got)
		}
		n.Store(0)
		install(t, h, "1")
		if got := n.Load(); got != 0 {
			t.Fatalf("%d lists of the release's records in the install after a read ahead, want 0", got)
		}
		// the release is now the snapshot's own write: nothing to read
		h.ReadAhead("demo")
		if got := len(h.ahead.reads); got != 0 {
			t.Fatalf("%d reads ahead of a release the snapshot has", got)
		}
		if res, err := h.Upgrade(t.Context(), Release{Name: "demo", ChartDir: chartDir, Values: values("1")}); err != nil || res.Upgraded {
			t.Fatalf("unchanged: %+v, %v", res, err)
		}
		if got := n.Load(); got != 0 {
			t.Fatalf("%d lists of the release's records for an unchanged release, want 0", got)
		}
	})

	t.Run("old", func(t *testing.T) {
		t.Parallel()
		h, _, n := countingHelm(t, isHistory)
		reloaded(h)
		readAheadWait(t, h, "demo")
		n.Store(0)
		h.now = func() time.Time { return time.Now().Add(2 * aheadTTL) }
		install(t, h, "1")
		if got := n.Load(); got != 1 {
			t.Fatalf("%d lists of the release's records in the install after an old read ahead, want 1 (read again)", got)
		}
	})

	t.Run("upgrade", func(t *testing.T) {
		t.Parallel()
		h, _, n := countingHelm(t, isHistory)
		install(t, h, "1")
		h.snapshot.invalidate() // no fresh record: the run reads it ahead
		readAheadWait(t, h, "demo")
		n.Store(0)
		if res, err := h.Upgrade(t.Context(), Release{Name: "demo", ChartDir: chartDir, Values: values("2")}); err != nil || !res.Upgraded || res.Revision != 2 {
			t.Fatalf("upgrade: %+v, %v", res, err)
		}
		// the history bound's only (Helm's look for the last record is
		// answered by the read ahead)
		if got := n.Load(); got != 1 {
			t.Fatalf("%d lists of the release's records in an upgrade after a read ahead, want 1", got)
		}
	})

	t.Run("upgraded meanwhile", func(t *testing.T) {
		t.Parallel()
		h, ns, _ := countingHelm(t, isHistory)
		install(t, h, "1")
		h.snapshot.invalidate()
		readAheadWait(t, h, "demo")
		other := newHelm(t, ns)
		if res, err := other.Upgrade(t.Context(), Release{Name: "demo", ChartDir: chartDir, Values: values("theirs")}); err != nil || res.Revision != 2 {
			t.Fatalf("the other's upgrade: %+v, %v", res, err)
		}
		if res, err := h.Upgrade(t.Context(), Release{Name: "demo", ChartDir: chartDir, Values: values("ours")}); err == nil {
			t.Fatalf("an upgrade from a revision superseded after the read ahead succeeded: %+v", res)
		}
		rel, err := helmtest.Last(restCfg, ns, "demo")
		if err != nil {
			t.Fatal(err)
		}
		if rel.Version != 2 || rel.Info.Status != release.StatusDeployed || rel.Config["demo"].(map[string]any)["v"] != "theirs" {
			t.Fatalf("the other's revision: %d, %s, %v; want 2, deployed, theirs", rel.Version, rel.Info.Status, rel.Config["demo"])
		}
	})

	t.Run("taken meanwhile", func(t *testing.T) {
		t.Parallel()
		h, ns, _ := countingHelm(t, isHistory)
		reloaded(h)
		readAheadWait(t, h, "demo")
		other := newHelm(t, ns)
		install(t, other, "theirs")
		if res, err := h.Upgrade(t.Context(), Release{Name: "demo", ChartDir: chartDir, Values: values("ours")}); err == nil {
			t.Fatalf("an install over a release created after the read ahead succeeded: %+v", res)
		}
		rel, err := helmtest.Last(restCfg, ns, "demo")
		if err != nil {
			t.Fatal(err)
		}
		if rel.Version != 1 || rel.Info.Status != release.StatusDeployed {
			t.Fatalf("the other's release: revision %d, %s; want 1, deployed", rel.Version, rel.Info.Status)
		}
		cm, err := client.CoreV1().ConfigMaps(ns).Get(t.Context(), "demo", metav1.GetOptions{})
		if err != nil || cm.Data["v"] != "theirs" {
			t.Fatalf("the other's ConfigMap: %v, %v", cm.Data, err)
		}
	})
}
