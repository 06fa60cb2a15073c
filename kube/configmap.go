package kube

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
)

// ConfigMap is the values config backend: one ConfigMap, read, watched and
// updated with optimistic concurrency.
type ConfigMap struct {
	client    kubernetes.Interface
	namespace string
	name      string
	// redact rewrites Event messages (nil: as they are; RedactEvents)
	redact func(string) string
}

// NewConfigMap returns the backend for namespace/name.
func NewConfigMap(client kubernetes.Interface, namespace, name string) *ConfigMap {
	return &ConfigMap{client: client, namespace: namespace, name: name}
}

// Name is namespace/name.
func (c *ConfigMap) Name() string { return c.namespace + "/" + c.name }

// Get returns the data; a missing ConfigMap is empty data.
func (c *ConfigMap) Get(ctx context.Context) (map[string]string, error) {
	cm, err := c.client.CoreV1().ConfigMaps(c.namespace).Get(ctx, c.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get ConfigMap %s: %w", c.Name(), err)
	}
	return dataOf(cm), nil
}

func dataOf(cm *corev1.ConfigMap) map[string]string {
	if cm == nil || cm.Data == nil {
		return map[string]string{}
	}
	return maps.Clone(cm.Data)
}

// Update applies fn to the current data and writes the result, creating the
// ConfigMap when missing. On a conflict (someone else wrote in between) it
// reads again and re-applies fn, so a concurrent edit is never lost. It
// returns the data written and its resourceVersion.
func (c *ConfigMap) Update(ctx context.Context, fn func(map[string]string) (map[string]string, error)) (map[string]string, string, error) {
	var result map[string]string
	var version string
	err := retry.OnError(retry.DefaultBackoff, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		cms := c.client.CoreV1().ConfigMaps(c.namespace)
		cm, err := cms.Get(ctx, c.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cm = nil
		} else if err != nil {
			return err
		}
		next, err := fn(dataOf(cm))
		if err != nil {
			return err
		}
		result = next
		if cm == nil {
			cm, err = cms.Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: c.namespace},
				Data:       next,
			}, metav1.CreateOptions{FieldManager: FieldManagerConfigMap})
		} else if !maps.Equal(cm.Data, next) {
			cm = cm.DeepCopy()
			cm.Data = next
			cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: FieldManagerConfigMap})
		}
		if err == nil {
			version = cm.ResourceVersion
		}
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("update ConfigMap %s: %w", c.Name(), err)
	}
	return result, version, nil
}

// Watch calls onChange with the data and its resourceVersion after every
// add, update or delete (deleted: empty data, no version) until ctx is
// done. The first call is the state at start. Calls are sequential; a
// panic in onChange is logged and the watch goes on.
func (c *ConfigMap) Watch(ctx context.Context, onChange func(data map[string]string, version string)) {
	watchNamed(ctx, c.client.CoreV1().RESTClient(), "configmaps", c.namespace, c.name, &corev1.ConfigMap{},
		func(cm *corev1.ConfigMap) {
			defer recoverPanic("ConfigMap " + c.Name())
			if cm == nil {
				onChange(map[string]string{}, "")
				return
			}
			onChange(dataOf(cm), cm.ResourceVersion)
		}, nil)
}

// watchNamed lists and watches the one object of a resource named name
// (which a Role's resourceNames allows), calling call with it at start and
// after every add, update (not a resync) or delete (nil), one call at a
// time, until ctx is done. onError, when not nil, is told a failed list or
// watch, which the informer retries with backoff.
func watchNamed[T interface {
	*O
	runtime.Object
	GetResourceVersion() string
}, O any](ctx context.Context, rc cache.Getter, resource, namespace, name string, proto T, call func(T), onError func(error)) {
	lw := cache.NewListWatchFromClient(rc, resource, namespace, fields.OneTermEqualSelector("metadata.name", name))
	inf := cache.NewSharedIndexInformer(lw, proto, 10*time.Minute, cache.Indexers{})
	if onError != nil {
		_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) { onError(err) })
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { call(obj.(T)) },
		UpdateFunc: func(old, obj any) {
			if old.(T).GetResourceVersion() == obj.(T).GetResourceVersion() {
				return // a resync, not a change
			}
			call(obj.(T))
		},
		DeleteFunc: func(any) { call(nil) },
	})
	inf.Run(ctx.Done())
}
