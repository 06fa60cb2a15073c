package kube

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The record writer stores what Helm's own Secrets driver stores for a
// created and an updated record, on first use of its gzip writer and on
// reuse: the same labels and type, and the same release JSON, gzipped at
// BestSpeed; a large record is gzipped at BestCompression, as Helm's, and
// is then the same byte for byte. Helm's driver reads each back whole.
func TestRecordWriterAsHelm(t *testing.T) {
	t.Parallel()
	// a large chart: random text, which gzip shrinks only by base64's share
	noise := make([]byte, 3*recordCompact/2)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(noise)
	rel := func(version int, status release.Status, templ string) *release.Release {
		return &release.Release{
			Name: "demo", Namespace: "ns", Version: version, Manifest: "kind: ConfigMap\n" + templ,
			Info:   &release.Info{Status: status, Description: "Install complete"},
			Labels: map[string]string{LabelMaintenance: "true", "status": "ignored: Helm sets its own"},
			Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "demo", Version: "0.1.0"},
				Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte(strings.Repeat(templ, 200))}}},
			Config: map[string]any{"global": map[string]any{"enabledModules": []any{"a", "b", "demo"}}},
		}
	}
	theirsCS, oursCS := fake.NewClientset(), fake.NewClientset()
	theirs := driver.NewSecrets(theirsCS.CoreV1().Secrets("ns"))
	ours := &recordWriter{Driver: driver.NewSecrets(oursCS.CoreV1().Secrets("ns")), secrets: oursCS.CoreV1().Secrets("ns"), now: time.Now}
	// fixed: the release's labels hold the stamp, which both must keep;
	// big: the record is over recordCompact
	same := func(key, stamp string, fixed, big bool) {
		t.Helper()
		a, err := theirsCS.CoreV1().Secrets("ns").Get(context.Background(), key, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := oursCS.CoreV1().Secrets("ns").Get(context.Background(), key, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if a.Labels[stamp] == "" || b.Labels[stamp] == "" {
			t.Fatalf("%s: %s labels %v and %v", key, stamp, a.Labels, b.Labels)
		}
		if !fixed {
			b.Labels[stamp] = a.Labels[stamp] // each driver's own clock
		}
		if !maps.Equal(a.Labels, b.Labels) || a.Type != b.Type || len(a.Data) != 1 || !bytes.Equal(gunzipped(t, a.Data["release"]), gunzipped(t, b.Data["release"])) {
			t.Fatalf("%s: Helm's driver stored labels %v, type %q, %d bytes; ours %v, %q, %d bytes", key,
				a.Labels, a.Type, len(a.Data["release"]), b.Labels, b.Type, len(b.Data["release"]))
		}
		if big != bytes.Equal(a.Data["release"], b.Data["release"]) {
			t.Fatalf("%s: Helm's record is %d bytes, ours %d; the same bytes: %t, want %t (BestCompression only above %d)", key,
				len(a.Data["release"]), len(b.Data["release"]), !big, big, recordCompact)
		}
	}
	// an upgrade's records: the labels read back from the last record,
	// its write's stamps among them
	upgraded := rel(3, release.StatusSuperseded, "c: 3\n")
	upgraded.Labels["modifiedAt"], upgraded.Labels["createdAt"] = "1700000000", "1600000000"
	large := rel(4, release.StatusPendingUpgrade, "d: 4\n")
	large.Chart.Templates[0].Data = []byte(base64.StdEncoding.EncodeToString(noise))
	for i, r := range []*release.Release{rel(1, release.StatusPendingInstall, "a: 1\n"), rel(2, release.StatusPendingUpgrade, "b: 2\n"), upgraded, large} {
		key := makeRecordKey(r)
		if err := theirs.Create(key, r); err != nil {
			t.Fatal(err)
		}
		if err := ours.Create(key, r); err != nil {
			t.Fatal(err)
		}
		same(key, "createdAt", r.Labels["createdAt"] != "", r == large)
		r.Info.Status = release.StatusDeployed
		if err := theirs.Update(key, r); err != nil {
			t.Fatal(err)
		}
		if err := ours.Update(key, r); err != nil {
			t.Fatal(err)
		}
		same(key, "modifiedAt", r.Labels["modifiedAt"] != "", r == large)
		got, err := ours.Get(key)
		if err != nil || got.Version != i+1 || got.Info.Status != release.StatusDeployed || len(got.Chart.Templates) != 1 || got.Config["global"] == nil {
			t.Fatalf("Helm's read of our record %s: %+v, %v", key, got, err)
		}
	}
	if err := ours.Create(makeRecordKey(rel(1, release.StatusPendingInstall, "")), rel(1, release.StatusPendingInstall, "")); !errors.Is(err, driver.ErrReleaseExists) {
		t.Fatalf("creating an existing record: %v, want driver.ErrReleaseExists", err)
	}
}

// gunzipped is a stored record's JSON.
func gunzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(string(data))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// makeRecordKey is Helm's name of a release's record.
func makeRecordKey(r *release.Release) string {
	return fmt.Sprintf("sh.helm.release.v1.%s.v%d", r.Name, r.Version)
}

// BenchmarkEncodeRecord: a release record's encoding, allocations
// included (a fresh BestCompression writer is ~760 KB).
func BenchmarkEncodeRecord(b *testing.B) {
	r := &release.Release{Name: "demo", Version: 1, Info: &release.Info{Status: release.StatusDeployed},
		Chart:  &chart.Chart{Metadata: &chart.Metadata{Name: "demo"}, Templates: []*chart.File{{Name: "t", Data: bytes.Repeat([]byte("k: v\n"), 100)}}},
		Config: map[string]any{"global": map[string]any{"enabledModules": []any{"a"}}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeRecord(r); err != nil {
			b.Fatal(err)
		}
	}
}
