package kube

// Release records as the operator keeps them between its reads: the
// fields it decides on, not the chart's files and values nor the values
// given, which every record holds in full (docs/performance.md).

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// headOf is rel without the chart's templates, files and values, the
// values given and the chart hooks: its name, version, namespace, status
// and times, labels, manifest and the chart's metadata. A module's values
// include global values, which hold every enabled module's name
// (global.enabledModules), so a whole record per module grows with the
// number of modules, and a snapshot of them with its square. A head is
// never written back: a write reads the whole record first (label).
func headOf(rel *release.Release) *release.Release {
	if rel == nil {
		return nil
	}
	h := &release.Release{Name: rel.Name, Info: rel.Info, Manifest: rel.Manifest, Version: rel.Version,
		Namespace: rel.Namespace, Labels: rel.Labels}
	if rel.Chart != nil {
		h.Chart = &chart.Chart{Metadata: rel.Chart.Metadata}
	}
	return h
}

// recordHead is the part of a stored release record that headOf keeps;
// decoding into it skips the rest without building it.
type recordHead struct {
	Name  string        `json:"name"`
	Info  *release.Info `json:"info"`
	Chart *struct {
		Metadata *chart.Metadata `json:"metadata"`
	} `json:"chart"`
	Manifest  string `json:"manifest"`
	Version   int    `json:"version"`
	Namespace string `json:"namespace"`
}

var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// listHeads reads every release record of the namespace (Helm's Secrets,
// labelled owner=helm) as heads: Helm's own list decodes each whole,
// which at 1,000 modules held ~40 MB for a moment at every reload. It
// reads page records a request (Releases: headsPage), since one list of
// all was the operator's peak of memory at 1,000 modules
// (docs/performance.md).
// The format is Helm's storage format: base64 of gzipped JSON, or of plain
// JSON for records from before Helm compressed them; the labels are the
// Secret's, as Helm's list sets them.
func listHeads(ctx context.Context, secrets corev1client.SecretInterface, page int64) ([]*release.Release, error) {
	var out []*release.Release
	opts := metav1.ListOptions{LabelSelector: "owner=helm", Limit: page}
	for {
		list, err := secrets.List(ctx, opts)
		if apierrors.IsResourceExpired(err) && opts.Continue != "" {
			// the list's snapshot is gone (etcd compacted it): start over,
			// in one list, as client-go's pager does
			out, opts = nil, metav1.ListOptions{LabelSelector: opts.LabelSelector}
			continue
		}
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			item := &list.Items[i]
			rel, err := decodeHead(item.Data["release"])
			if err != nil {
				// as Helm's list: a record that does not decode is skipped
				continue
			}
			rel.Labels = item.Labels
			out = append(out, rel)
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

// headsPage is how many release records one list of listHeads reads.
const headsPage = 100

func decodeHead(data []byte) (*release.Release, error) {
	b := make([]byte, base64.StdEncoding.DecodedLen(len(data)))
	n, err := base64.StdEncoding.Decode(b, data)
	if err != nil {
		return nil, err
	}
	b = b[:n]
	var r io.Reader = bytes.NewReader(b)
	if bytes.HasPrefix(b, gzipMagic) {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		r = zr
	}
	// read whole, as Helm does: a truncated or corrupt gzip stream, or
	// data after the JSON, is an error (the record is skipped, as Helm's
	// list skips it). A field of the wrong type among those not decoded
	// here is not seen; Helm's own read of that record fails later.
	b, err = io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("decode release record: %w", err)
	}
	var h recordHead
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("decode release record: %w", err)
	}
	rel := &release.Release{Name: h.Name, Info: h.Info, Manifest: h.Manifest, Version: h.Version, Namespace: h.Namespace}
	if h.Chart != nil {
		rel.Chart = &chart.Chart{Metadata: h.Chart.Metadata}
	}
	return rel, nil
}
