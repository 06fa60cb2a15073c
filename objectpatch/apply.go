package objectpatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/retry"

	"github.com/addonops/addon-operator/kube"
)

// fieldManager is the name object patches write under: drift checks
// leave what hooks set alone (docs/operator.md, "Drift").
const fieldManager = kube.FieldManagerObjectPatch

// JQTimeout bounds one JQPatch filter run (a variable for tests).
var JQTimeout = 5 * time.Second

// Applier applies operations with the operator's credentials.
type Applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	logger *slog.Logger
	// DeleteWait bounds how long a (foreground) Delete waits for the
	// object to be gone; DeletePoll is how often it looks.
	DeleteWait, DeletePoll time.Duration
}

// New returns an Applier for cfg.
func New(cfg *rest.Config, logger *slog.Logger) (*Applier, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("object patches: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("object patches: %w", err)
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
		logger: logger, DeleteWait: 20 * time.Second, DeletePoll: time.Second}, nil
}

// OpError is one failed operation of Apply.
type OpError struct {
	Op  Op
	Err error
}

func (e *OpError) Error() string { return fmt.Sprintf("KUBERNETES_PATCH_PATH: %s: %v", e.Op, e.Err) }

func (e *OpError) Unwrap() error { return e.Err }

// MaxJQOutput bounds a JQPatch's result, as a binding's jqFilter is bounded
// (docs/security.md, "Limits").
const MaxJQOutput = 1 << 20

// Apply applies ops in order. As in the original, a failed operation does
// not stop the ones after it; the error names every failed operation.
func (a *Applier) Apply(ctx context.Context, ops []Op) error {
	var errs []error
	reset := false // discovery is read again at most once per Apply
	for _, op := range ops {
		if ctx.Err() != nil {
			errs = append(errs, fmt.Errorf("KUBERNETES_PATCH_PATH: %s and later: %w", op, ctx.Err()))
			break
		}
		if err := a.apply(ctx, op, &reset); err != nil {
			errs = append(errs, &OpError{Op: op, Err: err})
			continue
		}
		a.logger.Debug("object patch applied", "index", op.Index, "operation", op.Operation,
			"kind", op.Kind, "namespace", op.Namespace, "name", op.Name)
	}
	return errors.Join(errs...)
}

func (a *Applier) apply(ctx context.Context, op Op, reset *bool) error {
	ri, err := a.resource(ctx, op, reset)
	if err != nil {
		return err
	}
	sub := subresources(op.Subresource)
	switch op.Operation {
	case Create, CreateIfNotExists, CreateOrUpdate:
		return a.create(ctx, ri, op, sub)
	case Delete, DeleteInBackground, DeleteNonCascading:
		return a.delete(ctx, ri, op)
	case MergePatch, JSONPatch:
		pt := types.MergePatchType
		if op.Operation == JSONPatch {
			pt = types.JSONPatchType
		}
		_, err := ri.Patch(ctx, op.Name, pt, op.Patch, metav1.PatchOptions{FieldManager: fieldManager}, sub...)
		if op.IgnoreMissingObject && apierrors.IsNotFound(err) {
			return nil
		}
		return err
	case JQPatch:
		return a.jqPatch(ctx, ri, op, sub)
	}
	return fmt.Errorf("unknown operation %q", op.Operation)
}

func subresources(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// resource maps the operation's kind to its resource; a miss resets the
// discovery cache once, for kinds (CRDs) that appeared since.
func (a *Applier) resource(ctx context.Context, op Op, reset *bool) (dynamic.ResourceInterface, error) {
	m, err := a.mapping(ctx, op)
	if meta.IsNoMatchError(err) && !*reset {
		*reset = true
		a.mapper.ResetWithContext(ctx)
		m, err = a.mapping(ctx, op)
	}
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := op.Namespace
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		return a.dyn.Resource(m.Resource).Namespace(ns), nil
	}
	return a.dyn.Resource(m.Resource), nil
}

func (a *Applier) mapping(ctx context.Context, op Op) (*meta.RESTMapping, error) {
	if op.APIVersion == "" {
		// no apiVersion: the kind's preferred version in any group
		gvr, err := a.mapper.ResourceForWithContext(ctx, schema.GroupVersionResource{Resource: strings.ToLower(op.Kind)})
		if err != nil {
			return nil, err
		}
		gvk, err := a.mapper.KindForWithContext(ctx, gvr)
		if err != nil {
			return nil, err
		}
		return a.mapper.RESTMappingWithContext(ctx, gvk.GroupKind(), gvk.Version)
	}
	gv, err := schema.ParseGroupVersion(op.APIVersion)
	if err != nil {
		return nil, err
	}
	return a.mapper.RESTMappingWithContext(ctx, schema.GroupKind{Group: gv.Group, Kind: op.Kind}, gv.Version)
}

func (a *Applier) create(ctx context.Context, ri dynamic.ResourceInterface, op Op, sub []string) error {
	obj := op.Object.DeepCopy()
	_, err := ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager}, sub...)
	if !apierrors.IsAlreadyExists(err) || op.Operation == Create {
		return err
	}
	if op.Operation == CreateIfNotExists {
		return nil
	}
	// CreateOrUpdate: replace it, on the resourceVersion just read
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{}, sub...)
		if err != nil {
			return err
		}
		next := op.Object.DeepCopy()
		next.SetResourceVersion(cur.GetResourceVersion())
		_, err = ri.Update(ctx, next, metav1.UpdateOptions{FieldManager: fieldManager}, sub...)
		return err
	})
}

func (a *Applier) delete(ctx context.Context, ri dynamic.ResourceInterface, op Op) error {
	policy := map[string]metav1.DeletionPropagation{
		Delete:             metav1.DeletePropagationForeground,
		DeleteInBackground: metav1.DeletePropagationBackground,
		DeleteNonCascading: metav1.DeletePropagationOrphan,
	}[op.Operation]
	err := ri.Delete(ctx, op.Name, metav1.DeleteOptions{PropagationPolicy: &policy}, subresources(op.Subresource)...)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || policy != metav1.DeletePropagationForeground {
		return err
	}
	// Delete waits for the object, and its dependents, to be gone
	err = wait.PollUntilContextTimeout(ctx, a.DeletePoll, a.DeleteWait, true, func(ctx context.Context) (bool, error) {
		_, err := ri.Get(ctx, op.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("waiting for the deletion: %w", err)
	}
	return nil
}

// jqPatch reads the object, runs the filter on it and writes back the one
// object it yields (unless unchanged), retrying on a conflict.
func (a *Applier) jqPatch(ctx context.Context, ri dynamic.ResourceInterface, op Op, sub []string) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := ri.Get(ctx, op.Name, metav1.GetOptions{})
		if op.IgnoreMissingObject && apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		in, err := plain(cur.Object)
		if err != nil {
			return err
		}
		// bounded like a binding's jqFilter (docs/security.md, "Limits")
		jqCtx, cancel := context.WithTimeout(ctx, JQTimeout)
		defer cancel()
		iter := op.JQ.RunWithContext(jqCtx, in)
		v, ok := iter.Next()
		if !ok {
			return errors.New("jqFilter: no output")
		}
		if e, isErr := v.(error); isErr {
			return fmt.Errorf("jqFilter: %w", e)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("jqFilter: %w", err)
		}
		if len(b) > MaxJQOutput {
			return fmt.Errorf("jqFilter: result of %d bytes, more than %d", len(b), MaxJQOutput)
		}
		next := &unstructured.Unstructured{}
		if err := next.UnmarshalJSON(b); err != nil {
			return fmt.Errorf("jqFilter: result is not an object: %w", err)
		}
		if reflect.DeepEqual(in, v) {
			return nil
		}
		_, err = ri.Update(ctx, next, metav1.UpdateOptions{FieldManager: fieldManager}, sub...)
		return err
	})
}

// plain turns an object into the JSON types gojq accepts.
func plain(obj map[string]any) (any, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var v any
	return v, json.Unmarshal(b, &v)
}
