package testenv

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// TakeLease writes holder into a Lease for a minute, as another candidate
// that won it would: whoever held it can no longer renew it.
func TakeLease(ctx context.Context, client kubernetes.Interface, namespace, name, holder string) error {
	leases := client.CoordinationV1().Leases(namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		seconds := int32(60)
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.AcquireTime, l.Spec.RenewTime = &holder, &seconds, &now, &now
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
}
