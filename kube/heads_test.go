package kube

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// The snapshot keeps heads of release records (heads.go); a write that
// starts from one, a maintenance label here, still stores the whole
// record: the chart, its values and the values given stay for Helm
// (`helm get values`, a rollback).
func TestLabelFromHeadKeepsTheWholeRecord(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	h := newHelm(t, ns)
	r := Release{Name: "demo", ChartDir: testChart(t, goodManifest), Values: map[string]any{"demo": map[string]any{"v": "1"}, "global": map[string]any{"enabledModules": []any{"demo"}}}}
	if _, err := h.Upgrade(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	// the next run decides on the list's heads
	if _, err := h.Releases(t.Context()); err != nil {
		t.Fatal(err)
	}
	if head, cached, fresh := h.snapshot.get("demo", h.now()); !cached || !fresh || head.Config != nil || len(head.Chart.Templates) != 0 || head.Manifest == "" {
		t.Fatalf("snapshot holds %+v (cached %v, fresh %v); want a head with its manifest", head, cached, fresh)
	}
	r.Maintenance = true
	if res, err := h.Upgrade(t.Context(), r); err != nil || res.Reason != "maintenance" {
		t.Fatalf("maintenance: %+v, %v", res, err)
	}
	full, err := h.cfg.Releases.Last("demo")
	if err != nil {
		t.Fatal(err)
	}
	if full.Labels[LabelMaintenance] != "true" {
		t.Fatalf("labels %v: want %s", full.Labels, LabelMaintenance)
	}
	if full.Config["demo"] == nil || len(full.Chart.Templates) == 0 || full.Chart.Metadata == nil {
		t.Fatalf("the record lost its values or chart: config %v, %d templates", full.Config, len(full.Chart.Templates))
	}
}

// decodeHead reads Helm's storage format as Helm's list does: gzipped or
// plain JSON, and a record Helm would not decode is an error (skipped).
func TestDecodeHead(t *testing.T) {
	t.Parallel()
	const record = `{"name":"demo","info":{"status":"deployed"},"chart":{"metadata":{"name":"demo","annotations":{"a":"b"}},"values":{"x":1}},"config":{"global":{"enabledModules":["demo"]}},"manifest":"kind: ConfigMap","version":3,"namespace":"ns"}`
	gz := func(s string) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		_, _ = w.Write([]byte(s))
		_ = w.Close()
		return b.Bytes()
	}
	b64 := func(b []byte) []byte { return []byte(base64.StdEncoding.EncodeToString(b)) }
	whole := gz(record)
	tests := []struct {
		name string
		data []byte
		ok   bool
	}{
		{"gzipped, as Helm writes", b64(whole), true},
		{"plain JSON, from before Helm compressed", b64([]byte(record)), true},
		{"data after the JSON", b64(gz(record + " trailing")), false},
		{"a truncated gzip stream", b64(whole[:len(whole)-6]), false},
		{"not base64", []byte("%%%"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rel, err := decodeHead(tt.data)
			if !tt.ok {
				if err == nil {
					t.Fatalf("decoded %+v, want an error", rel)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rel.Name != "demo" || rel.Version != 3 || rel.Namespace != "ns" || rel.Info.Status != "deployed" ||
				rel.Manifest != "kind: ConfigMap" || rel.Chart.Metadata.Annotations["a"] != "b" || rel.Config != nil || rel.Chart.Values != nil {
				t.Fatalf("head %+v (chart %+v)", rel, rel.Chart)
			}
		})
	}
}

// countingSecrets counts the lists made through it.
type countingSecrets struct {
	corev1client.SecretInterface
	lists atomic.Int32
}

func (c *countingSecrets) List(ctx context.Context, opts metav1.ListOptions) (*corev1.SecretList, error) {
	c.lists.Add(1)
	return c.SecretInterface.List(ctx, opts)
}

// The reload's list of release records reads them a page at a time and
// finds every release, a corrupt record skipped, as in one list.
func TestListHeadsInPages(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	h := newHelm(t, ns)
	var want []string
	for i := range 5 {
		name := fmt.Sprintf("paged-%d", i)
		want = append(want, name)
		r := Release{Name: name, ChartDir: testChart(t, strings.ReplaceAll(goodManifest, "name: demo", "name: "+name)), Values: map[string]any{"demo": map[string]any{"v": "1"}}}
		if _, err := h.Upgrade(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.secrets.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.broken.v1",
		Labels: map[string]string{"owner": "helm", "name": "broken"}}, Data: map[string][]byte{"release": []byte("%%%")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, page := range []int64{2, headsPage} {
		cs := &countingSecrets{SecretInterface: h.secrets}
		heads, err := listHeads(t.Context(), cs, page)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range heads {
			got = append(got, r.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("page %d: heads of %v, want %v", page, got, want)
		}
		if wantLists := (6 + page - 1) / page; int64(cs.lists.Load()) != wantLists {
			t.Fatalf("page %d: %d lists, want %d", page, cs.lists.Load(), wantLists)
		}
	}
}
