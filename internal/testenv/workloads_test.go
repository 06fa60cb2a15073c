package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestWorkloadsRollOut: with WithWorkloads a Deployment becomes Available on
// the simulated node; one whose pods carry NeverReadyPodLabel never does, and
// one whose pods carry FailPodLabel has its pods fail.
func TestWorkloadsRollOut(t *testing.T) {
	start := time.Now()
	cp, err := Start(t.Context(), WithWorkloads())
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	t.Logf("control plane with workloads ready in %s", time.Since(start).Round(time.Millisecond))
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	for _, d := range []*appsv1.Deployment{deployment("good", nil), deployment("stuck", map[string]string{NeverReadyPodLabel: "true"}),
		deployment("bad", map[string]string{FailPodLabel: "true"})} {
		if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(ctx, t, "deployment good Available with 2 ready replicas", func() (bool, error) {
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "good", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return d.Status.ReadyReplicas == 2 && available(d), nil
	})
	waitFor(ctx, t, "a pod of deployment bad Failed", func() (bool, error) {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=bad"})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodFailed {
				return true, nil
			}
		}
		return false, nil
	})
	d, err := cs.AppsV1().Deployments("default").Get(ctx, "stuck", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.ReadyReplicas != 0 || d.Status.Replicas != 2 || available(d) {
		t.Fatalf("deployment stuck: %d of %d ready, available %v; want 0 of 2, not available", d.Status.ReadyReplicas, d.Status.Replicas, available(d))
	}

	// deleting the Deployment removes its pods (garbage collector + kwok)
	bg := metav1.DeletePropagationBackground
	if err := cs.AppsV1().Deployments("default").Delete(ctx, "good", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "pods of deployment good gone", func() (bool, error) {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=good"})
		return err == nil && len(pods.Items) == 0, err
	})
}

func deployment(name string, podLabels map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	for k, v := range podLabels {
		labels[k] = v
	}
	replicas := int32(2)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
				},
			},
		},
	}
}

func available(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		select {
		case <-ctx.Done():
			t.Fatal(fmt.Errorf("timed out waiting for %s (last error: %v)", what, last))
		case <-time.After(200 * time.Millisecond):
		}
	}
}
