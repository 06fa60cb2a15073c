package health

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/addonops/addon-operator/kube"
)

// refsReleases hands out fixed release objects (the benchmark installs
// objects directly, not through Helm, to measure the tracker alone).
type refsReleases map[string]kube.ReleaseObjects

func (r refsReleases) ReleaseObjects(_ context.Context, name string) (kube.ReleaseObjects, error) {
	return r[name], nil
}

// countingWatcher is a Watcher whose API requests are counted.
func countingWatcher(b *testing.B) (*kube.Watcher, *atomic.Int64) {
	var n atomic.Int64
	cfg := rest.CopyConfig(restCfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTrip(func(req *http.Request) (*http.Response, error) {
			n.Add(1)
			return rt.RoundTrip(req)
		})
	})
	w, err := kube.NewWatcher(cfg, quiet())
	if err != nil {
		b.Fatal(err)
	}
	return w, &n
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkHealth100x5: 100 modules of 5 objects each (a Deployment, a
// Service, a ConfigMap, a Secret, a ServiceAccount) in one namespace, kept
// current by a tracker: the heap it adds, its API requests (per object),
// and the time from an object's change to the module's new status.
func BenchmarkHealth100x5(b *testing.B) {
	ns := namespace(b)
	ctx := b.Context()
	const modules = 100
	rels := refsReleases{}
	zero := int32(0)
	for i := range modules {
		name := fmt.Sprintf("m%03d", i)
		meta := metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}}
		if _, err := client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: &zero,
			Selector: &metav1.LabelSelector{MatchLabels: meta.Labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: meta.Labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "fake"}}}}}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: meta, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		ref := func(apiVersion, kind string) kube.ObjectRef {
			return kube.ObjectRef{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name}
		}
		rels[name] = kube.ReleaseObjects{Revision: 1, Objects: []kube.ObjectRef{ref("apps/v1", "Deployment"), ref("v1", "Service"),
			ref("v1", "ConfigMap"), ref("v1", "Secret"), ref("v1", "ServiceAccount")}}
	}
	// the Deployments rolled out (the controller is slower than the tracker)
	for {
		list, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		ready := 0
		for _, d := range list.Items {
			if d.Status.ObservedGeneration == d.Generation && len(d.Status.Conditions) > 0 {
				ready++
			}
		}
		if ready == modules {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for b.Loop() {
		w, requests := countingWatcher(b)
		var mu sync.Mutex
		changed := map[string]chan struct{}{}
		t := NewTracker(KubeWatches(w), rels, Options{Logger: quiet(), ProgressTimeout: time.Millisecond, OnTransition: func(tr Transition) {
			mu.Lock()
			if ch := changed[tr.Module]; ch != nil && tr.Health.Status == Degraded {
				close(ch)
				delete(changed, tr.Module)
			}
			mu.Unlock()
		}})
		before := heap()
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			t.Run(runCtx)
		}()
		start := time.Now()
		for name := range rels {
			t.Deployed(ctx, name, 1, true)
		}
		for name := range rels {
			for {
				h, _ := t.Module(name)
				if h.Status == Healthy {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		tracked := time.Since(start)
		after := heap()
		reqs := requests.Load()
		// event to status: delete a module's ConfigMap; its module turns
		// Degraded (NotFound past the timeout) on /status
		var lat []time.Duration
		for i := range 20 {
			name := fmt.Sprintf("m%03d", i)
			t0 := time.Now()
			if err := client.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				b.Fatal(err)
			}
			for {
				if h, _ := t.Module(name); h.Status == Degraded {
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
			lat = append(lat, time.Since(t0))
			meta := metav1.ObjectMeta{Name: name}
			if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		slices.Sort(lat)
		watches := len(w.Watches())
		cancel()
		<-done
		b.ReportMetric(float64(int64(after)-int64(before))/(1<<20), "heap-MiB")
		b.ReportMetric(float64(reqs), "api-requests")
		b.ReportMetric(float64(reqs)/float64(modules*5), "requests/object")
		b.ReportMetric(float64(watches), "watches")
		b.ReportMetric(tracked.Seconds(), "track-all-s")
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "event-to-status-p50-ms")
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "event-to-status-max-ms")
	}
}
