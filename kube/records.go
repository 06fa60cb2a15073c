package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// ReleaseRecords follows which releases of a namespace have records: a
// watch of the metadata of Helm's release Secrets (owner=helm), each kept
// as its name and labels. An install whose release it knows to have no
// record tells Helm so, in place of Helm's LIST of the name's history a
// moment later: one round trip less per install (docs/performance.md).
// The reload's list of release records is no such answer: it may be its
// TTL old, and a release made meanwhile whose first revision the history
// bound removed would be installed over. The watch is as fresh as a LIST
// made a moment before, within its delivery delay; creating the pending
// record stays the guard for the moment between, as it is after Helm's
// own LIST.
type ReleaseRecords struct {
	informer cache.SharedIndexInformer
}

// byRelease indexes the records by their release's name (Helm's "name"
// label).
const byRelease = "release"

// NewReleaseRecords prepares the watch of namespace's release records;
// Run runs it.
func NewReleaseRecords(cfg *rest.Config, namespace string) (*ReleaseRecords, error) {
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("release records: %w", err)
	}
	inf := metadatainformer.NewFilteredMetadataInformer(mc, corev1.SchemeGroupVersion.WithResource("secrets"), namespace, 0,
		cache.Indexers{byRelease: func(obj any) ([]string, error) {
			m, err := meta.Accessor(obj)
			if err != nil {
				return nil, err
			}
			return []string{m.GetLabels()["name"]}, nil
		}},
		func(o *metav1.ListOptions) { o.LabelSelector = "owner=helm" }).Informer()
	// a record's name and labels are all the index needs: not its managed
	// fields, annotations or owners
	if err := inf.SetTransform(func(obj any) (any, error) {
		if p, ok := obj.(*metav1.PartialObjectMetadata); ok {
			return &metav1.PartialObjectMetadata{TypeMeta: p.TypeMeta, ObjectMeta: metav1.ObjectMeta{
				Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, ResourceVersion: p.ResourceVersion}}, nil
		}
		return obj, nil
	}); err != nil {
		return nil, err
	}
	return &ReleaseRecords{informer: inf}, nil
}

// Run watches until ctx ends.
func (r *ReleaseRecords) Run(ctx context.Context) { r.informer.RunWithContext(ctx) }

// absent: the watch has listed the records, and none is of release name.
// Without a watch (nil), or before its first list, it knows nothing.
func (r *ReleaseRecords) absent(name string) bool {
	if r == nil || !r.informer.HasSynced() {
		return false
	}
	objs, err := r.informer.GetIndexer().ByIndex(byRelease, name)
	return err == nil && len(objs) == 0
}

// WithReleaseRecords makes the Helm client's installs ask r whether their
// release has any record (ReleaseRecords).
func WithReleaseRecords(r *ReleaseRecords) Option { return func(o *options) { o.records = r } }
