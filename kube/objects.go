package kube

import (
	"context"
	"fmt"
	"sort"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// ObjectRef names one object of a release.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Namespace is "" for a cluster-scoped object.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}

// ReleaseObjects is what a deployed release consists of.
type ReleaseObjects struct {
	// Revision is the release's revision (0: the module has no release).
	Revision int
	// Objects are the release's objects, sorted; their kinds are resolved
	// through discovery, so a namespaced object has its namespace.
	Objects []ObjectRef
	// Unresolved are objects whose kind the API server does not serve (a
	// CRD not established yet), with why.
	Unresolved map[ObjectRef]string
	// Annotations are the chart's annotations (Chart.yaml).
	Annotations map[string]string
}

// ReleaseObjects lists the objects of a module's latest release, read from
// its manifest (no object is read from the cluster). A module without a
// release has none.
func (h *Helm) ReleaseObjects(ctx context.Context, name string) (ReleaseObjects, error) {
	if err := ctx.Err(); err != nil {
		return ReleaseObjects{}, err
	}
	rel, exists, _, err := h.last(name)
	if err != nil || !exists {
		return ReleaseObjects{}, err
	}
	mapper, err := h.getter.ToRESTMapper()
	if err != nil {
		return ReleaseObjects{}, err
	}
	return releaseObjects(rel, mapper, h.namespace)
}

func releaseObjects(rel *release.Release, mapper meta.RESTMapper, namespace string) (ReleaseObjects, error) {
	out := ReleaseObjects{Revision: rel.Version, Unresolved: map[ObjectRef]string{}}
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		out.Annotations = rel.Chart.Metadata.Annotations
	}
	for file, doc := range releaseutil.SplitManifests(rel.Manifest) {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			return ReleaseObjects{}, fmt.Errorf("release %s: %s: %w", rel.Name, file, err)
		}
		if head.Kind == "" || head.Metadata.Name == "" {
			continue // an empty document
		}
		ref := ObjectRef{APIVersion: head.APIVersion, Kind: head.Kind, Namespace: head.Metadata.Namespace, Name: head.Metadata.Name}
		gv, err := schema.ParseGroupVersion(head.APIVersion)
		if err != nil {
			return ReleaseObjects{}, fmt.Errorf("release %s: %s: %w", rel.Name, ref, err)
		}
		m, err := mapper.RESTMapping(gv.WithKind(head.Kind).GroupKind(), gv.Version)
		if err != nil {
			out.Unresolved[ref] = err.Error()
			continue
		}
		switch {
		case m.Scope.Name() == meta.RESTScopeNameRoot:
			ref.Namespace = ""
		case ref.Namespace == "":
			ref.Namespace = namespace // as Helm installs it
		}
		out.Objects = append(out.Objects, ref)
	}
	sort.Slice(out.Objects, func(i, j int) bool { return out.Objects[i].String() < out.Objects[j].String() })
	return out, nil
}
