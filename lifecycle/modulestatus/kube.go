package modulestatus

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// GVR is the Module objects' resource (deploy/chart/addon-operator/crds).
var GVR = schema.GroupVersionResource{Group: "addonops.io", Version: "v1alpha1", Resource: "modules"}

// fieldManager owns the status the operator applies.
const fieldManager = "addon-operator"

// Kube is the Client of the API server: the objects in one namespace.
// It keeps each object as last read or written, so a status update needs
// no read first (and the Role no patch: deploy/chart's role.yaml). The
// writer alone writes through it; Ref, which Events asks from other
// goroutines, reads the same objects.
type Kube struct {
	res  dynamic.ResourceInterface
	mu   sync.Mutex // objs
	objs map[string]*unstructured.Unstructured
}

var _ Client = (*Kube)(nil)

// NewKube is a Client of namespace's Module objects.
func NewKube(cfg *rest.Config, namespace string) (*Kube, error) {
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("module objects: %w", err)
	}
	return &Kube{res: c.Resource(GVR).Namespace(namespace), objs: map[string]*unstructured.Unstructured{}}, nil
}

// List is the names of the Module objects.
func (k *Kube) List(ctx context.Context) ([]string, error) {
	l, err := k.res.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list module objects: %w", err)
	}
	names := make([]string, 0, len(l.Items))
	for i := range l.Items {
		o := &l.Items[i]
		names = append(names, o.GetName())
		k.keep(o.GetName(), o)
	}
	return names, nil
}

// Write creates the object when missing and updates its status; a conflict
// (someone else wrote it) reads it again and retries once.
func (k *Kube) Write(ctx context.Context, name string, st *Status) error {
	o, err := k.object(ctx, name)
	if err != nil {
		return err
	}
	err = k.update(ctx, o, st)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		k.keep(name, nil)
		if o, err = k.object(ctx, name); err != nil {
			return err
		}
		err = k.update(ctx, o, st)
	}
	if err != nil {
		k.keep(name, nil)
		return fmt.Errorf("module %s: write its status: %w", name, err)
	}
	return nil
}

// object is the module's object as last seen, read or created when unknown.
func (k *Kube) object(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	if o := k.seen(name); o != nil {
		return o, nil
	}
	o := &unstructured.Unstructured{}
	o.SetAPIVersion(GVR.GroupVersion().String())
	o.SetKind("Module")
	o.SetName(name)
	o.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "addon-operator"})
	got, err := k.res.Create(ctx, o, metav1.CreateOptions{FieldManager: fieldManager})
	if apierrors.IsAlreadyExists(err) {
		got, err = k.res.Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("module %s: its object: %w", name, err)
	}
	k.keep(name, got)
	return got, nil
}

// update sets st, observed at o's generation, as o's status.
func (k *Kube) update(ctx context.Context, o *unstructured.Unstructured, st *Status) error {
	st.observe(o.GetGeneration())
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	next := o.DeepCopy()
	next.Object["status"] = m
	got, err := k.res.UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: fieldManager})
	if err != nil {
		return err
	}
	k.keep(o.GetName(), got)
	return nil
}

// Delete deletes a module's object (gone already is fine).
func (k *Kube) Delete(ctx context.Context, name string) error {
	k.keep(name, nil)
	if err := k.res.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("module %s: delete its object: %w", name, err)
	}
	return nil
}

// Ref is the reference of the module's object as this process last read
// or wrote it (its UID: `kubectl describe` matches Events by it); false
// when it knows none (not written yet, deleted, or not the leader).
func (k *Kube) Ref(name string) (corev1.ObjectReference, bool) {
	o := k.seen(name)
	if o == nil {
		return corev1.ObjectReference{}, false
	}
	return corev1.ObjectReference{APIVersion: GVR.GroupVersion().String(), Kind: "Module",
		Namespace: o.GetNamespace(), Name: o.GetName(), UID: o.GetUID()}, true
}

func (k *Kube) seen(name string) *unstructured.Unstructured {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.objs[name]
}

// keep remembers o as the module's object (nil: forgets it).
func (k *Kube) keep(name string, o *unstructured.Unstructured) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if o == nil {
		delete(k.objs, name)
		return
	}
	k.objs[name] = o
}
