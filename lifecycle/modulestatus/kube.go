package modulestatus

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// GVR is the Module objects' resource (deploy/chart/addon-operator/crds).
var GVR = schema.GroupVersionResource{Group: "addonops.io", Version: "v1alpha1", Resource: "modules"}

// fieldManager owns the status the operator applies.
const fieldManager = "addon-operator"

// Kube is the Client of the API server: the objects in one namespace.
type Kube struct {
	res dynamic.ResourceInterface
	gen map[string]int64 // each object's generation, once created or listed
}

var _ Client = (*Kube)(nil)

// NewKube is a Client of namespace's Module objects.
func NewKube(cfg *rest.Config, namespace string) (*Kube, error) {
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("module objects: %w", err)
	}
	return &Kube{res: c.Resource(GVR).Namespace(namespace), gen: map[string]int64{}}, nil
}

// List is the names of the Module objects.
func (k *Kube) List(ctx context.Context) ([]string, error) {
	l, err := k.res.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list module objects: %w", err)
	}
	names := make([]string, 0, len(l.Items))
	for _, o := range l.Items {
		names = append(names, o.GetName())
		k.gen[o.GetName()] = o.GetGeneration()
	}
	return names, nil
}

// Write creates the object when missing and applies its status (server-side
// apply on the status subresource: the operator owns every field of it).
func (k *Kube) Write(ctx context.Context, name string, st *Status) error {
	gen, ok := k.gen[name]
	if !ok {
		o := &unstructured.Unstructured{}
		o.SetAPIVersion(GVR.GroupVersion().String())
		o.SetKind("Module")
		o.SetName(name)
		o.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "addon-operator"})
		created, err := k.res.Create(ctx, o, metav1.CreateOptions{FieldManager: fieldManager})
		switch {
		case apierrors.IsAlreadyExists(err):
			got, gerr := k.res.Get(ctx, name, metav1.GetOptions{})
			if gerr != nil {
				return fmt.Errorf("module %s: get its object: %w", name, gerr)
			}
			gen = got.GetGeneration()
		case err != nil:
			return fmt.Errorf("module %s: create its object: %w", name, err)
		default:
			gen = created.GetGeneration()
		}
		k.gen[name] = gen
	}
	st.observe(gen)
	body, err := json.Marshal(map[string]any{
		"apiVersion": GVR.GroupVersion().String(), "kind": "Module",
		"metadata": map[string]any{"name": name}, "status": st,
	})
	if err != nil {
		return fmt.Errorf("module %s: %w", name, err)
	}
	force := true
	_, err = k.res.Patch(ctx, name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: fieldManager, Force: &force}, "status")
	if apierrors.IsNotFound(err) {
		delete(k.gen, name) // deleted by someone else: created again next pass
	}
	if err != nil {
		return fmt.Errorf("module %s: write its status: %w", name, err)
	}
	return nil
}

// Delete deletes a module's object (gone already is fine).
func (k *Kube) Delete(ctx context.Context, name string) error {
	delete(k.gen, name)
	if err := k.res.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("module %s: delete its object: %w", name, err)
	}
	return nil
}
