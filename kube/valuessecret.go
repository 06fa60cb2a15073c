package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ValuesSecret is the values Secret: data keys are the values ConfigMap's
// keys, and every value in it is secret (docs/operator.md, "Secrets"). It
// is only read.
type ValuesSecret struct {
	client    kubernetes.Interface
	namespace string
	name      string
}

// NewValuesSecret returns the Secret namespace/name.
func NewValuesSecret(client kubernetes.Interface, namespace, name string) *ValuesSecret {
	return &ValuesSecret{client: client, namespace: namespace, name: name}
}

// Name is namespace/name.
func (s *ValuesSecret) Name() string { return s.namespace + "/" + s.name }

// Get returns the data and its resourceVersion; a missing Secret is empty
// data without a version. Any other failure (RBAC) is an error naming the
// Secret.
func (s *ValuesSecret) Get(ctx context.Context) (map[string]string, string, error) {
	sec, err := s.client.CoreV1().Secrets(s.namespace).Get(ctx, s.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return map[string]string{}, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("values Secret %s: %w", s.Name(), err)
	}
	return secretData(sec), sec.ResourceVersion, nil
}

// secretData is a Secret's data as text, keyed as the ConfigMap is.
func secretData(sec *corev1.Secret) map[string]string {
	out := make(map[string]string, len(sec.Data))
	for k, v := range sec.Data {
		out[k] = string(v)
	}
	return out
}

// Watch calls onChange with the data and its resourceVersion after every
// add, update or delete (deleted: empty data, no version) until ctx is
// done, the state at start first; calls are sequential. It lists and
// watches the one Secret by name, which a Role's resourceNames allows. A
// list or watch that fails (RBAC) is told to onError, naming the Secret,
// and retried with backoff.
func (s *ValuesSecret) Watch(ctx context.Context, onChange func(data map[string]string, version string), onError func(error)) {
	watchNamed(ctx, s.client.CoreV1().RESTClient(), "secrets", s.namespace, s.name, &corev1.Secret{},
		func(sec *corev1.Secret) {
			defer recoverPanic("Secret " + s.Name())
			if sec == nil {
				onChange(map[string]string{}, "")
				return
			}
			onChange(secretData(sec), sec.ResourceVersion)
		}, func(err error) { onError(fmt.Errorf("values Secret %s: %w", s.Name(), err)) })
}
