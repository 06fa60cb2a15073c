package kube

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// recordWriter is Helm's Secrets storage driver whose two writes, a
// record created and a record updated, encode the release with a reused
// gzip writer (recordGzip) at a faster level (encodeRecord). Helm's own
// driver makes a new writer at BestCompression for every record: ~760 KB
// of compressor state, two per install, which was 37 % of all the
// operator allocated in a 1,000-module converge (docs/performance.md).
// The Secret written is the one Helm's driver writes, its record gzipped
// at another level (TestRecordWriterAsHelm); reads and lists are Helm's.
type recordWriter struct {
	driver.Driver
	secrets corev1client.SecretInterface
	now     func() time.Time
}

var _ driver.Driver = (*recordWriter)(nil)

// recordType is the Secret type of Helm 3's release records.
const recordType = "helm.sh/release.v1"

// recordGzip is the gzip writer of all record writes below
// recordCompact, taken in turn: a sync.Pool kept up to one per core and
// another through each GC, more memory than the writes' brief waits for
// each other are worth (an encoding takes ~0.1 ms of a 15 ms install).
var recordGzip struct {
	sync.Mutex
	fast *gzip.Writer
}

// recordCompact is the gzipped size above which a record is encoded again
// at BestCompression, Helm's level: a record must fit in one Secret
// (1 MiB), and the fast level's output is bigger (by 4 % on the reference
// tree's records, more on large charts).
const recordCompact = 256 << 10

// Create writes a new record; one that exists is driver.ErrReleaseExists,
// as Helm's driver says (an install's guard against a second writer).
func (w *recordWriter) Create(key string, rls *release.Release) error {
	obj, err := recordSecret(key, rls, "createdAt", w.now())
	if err != nil {
		return fmt.Errorf("create: failed to encode release %q: %w", rls.Name, err)
	}
	if _, err := w.secrets.Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return driver.ErrReleaseExists
		}
		return fmt.Errorf("create: failed to create: %w", err)
	}
	return nil
}

// Update replaces a record.
func (w *recordWriter) Update(key string, rls *release.Release) error {
	obj, err := recordSecret(key, rls, "modifiedAt", w.now())
	if err != nil {
		return fmt.Errorf("update: failed to encode release %q: %w", rls.Name, err)
	}
	if _, err := w.secrets.Update(context.Background(), obj, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update: failed to update: %w", err)
	}
	return nil
}

// recordSecret is the Secret that holds rls under key, labelled as Helm
// labels it: the time of this write under stamp, the release's own labels
// over it, then name, owner, status and version over them.
func recordSecret(key string, rls *release.Release, stamp string, now time.Time) (*corev1.Secret, error) {
	if rls.Info == nil {
		return nil, errors.New("the release has no info")
	}
	data, err := encodeRecord(rls)
	if err != nil {
		return nil, err
	}
	labels := make(map[string]string, len(rls.Labels)+5)
	labels[stamp] = strconv.FormatInt(now.Unix(), 10)
	// over the stamp, as Helm's driver: a record read back carries the
	// stamp of its last write, which an upgrade's records keep
	for k, v := range rls.Labels {
		labels[k] = v
	}
	labels["name"] = rls.Name
	labels["owner"] = "helm"
	labels["status"] = rls.Info.Status.String()
	labels["version"] = strconv.Itoa(rls.Version)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: key, Labels: labels},
		Type:       recordType,
		Data:       map[string][]byte{"release": data},
	}, nil
}

// encodeRecord is Helm's storage format of a release: base64 of its JSON
// gzipped. Helm's driver gzips at BestCompression, which at 1,000 modules
// (each record holds every enabled module's name twice) took ~0.9 ms a
// record, two a module run, where BestSpeed takes 0.08 ms for 4 % more
// bytes (docs/performance.md); a record over recordCompact is gzipped at
// BestCompression, as Helm's. Helm reads either.
func encodeRecord(rls *release.Release) ([]byte, error) {
	b, err := json.Marshal(rls)
	if err != nil {
		return nil, err
	}
	recordGzip.Lock()
	defer recordGzip.Unlock()
	if recordGzip.fast == nil {
		recordGzip.fast, _ = gzip.NewWriterLevel(nil, gzip.BestSpeed) // the level is valid
	}
	buf, err := gzipWith(recordGzip.fast, b)
	if err == nil && buf.Len() > recordCompact {
		// a writer of its own, not kept: large records are rare, and a
		// compressor holds ~0.7 MB whatever its level
		best, _ := gzip.NewWriterLevel(nil, gzip.BestCompression)
		buf, err = gzipWith(best, b)
	}
	if err != nil {
		return nil, err
	}
	out := make([]byte, base64.StdEncoding.EncodedLen(buf.Len()))
	base64.StdEncoding.Encode(out, buf.Bytes())
	return out, nil
}

// gzipWith gzips b with zw, reset to write a new buffer.
func gzipWith(zw *gzip.Writer, b []byte) (*bytes.Buffer, error) {
	var buf bytes.Buffer
	zw.Reset(&buf)
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return &buf, nil
}
