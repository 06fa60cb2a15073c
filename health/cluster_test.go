package health

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/addonops/addon-operator/internal/testenv"
	"github.com/addonops/addon-operator/kube"
)

// The real-parts tests run on a control plane where pods start (kwok), one
// per package run, started by the first test that needs it.
var (
	restCfg *rest.Config
	client  kubernetes.Interface
	watcher *kube.Watcher
	nsSeq   atomic.Int64
	plane   = testenv.Shared{Options: []testenv.Option{testenv.WithWorkloads()}, Setup: func(cp *testenv.ControlPlane) {
		restCfg = cp.Config
		client = kubernetes.NewForConfigOrDie(restCfg)
		var err error
		if watcher, err = kube.NewWatcher(restCfg, quiet()); err != nil {
			panic(err)
		}
	}}
)

func TestMain(m *testing.M) { os.Exit(plane.Main(m)) }

func quiet() *slog.Logger {
	if os.Getenv("TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// namespace makes a namespace for one test on the workloads plane.
func namespace(t testing.TB) string {
	t.Helper()
	plane.Get(t)
	ns := fmt.Sprintf("h%d-%s", nsSeq.Add(1), strings.ToLower(t.Name()))
	if len(ns) > 50 {
		ns = ns[:50]
	}
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// chart writes testdata/chart with Chart.yaml's annotations into a new
// directory.
func chart(t testing.TB, annotations string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"Chart.yaml", "values.yaml", "templates/deployment.yaml", "templates/configmap.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", "chart", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "Chart.yaml" {
			b = append(b, []byte(annotations)...)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// operatorLike is a tracker on the real parts: Helm installs, the shared
// watches, Events on a real ConfigMap.
type operatorLike struct {
	ns      string
	helm    *kube.Helm
	tracker *Tracker
	reg     *prometheus.Registry
	trs     chan Transition
}

func newOperatorLike(t *testing.T, opts Options) *operatorLike {
	t.Helper()
	ns := namespace(t)
	helm, err := kube.NewHelm(restCfg, ns, quiet())
	if err != nil {
		t.Fatal(err)
	}
	o := &operatorLike{ns: ns, helm: helm, reg: prometheus.NewRegistry(), trs: make(chan Transition, 100)}
	cm := kube.NewConfigMap(client, ns, "addon-operator")
	events := Events(configMapEvents{cm}, quiet())
	opts.Logger = quiet()
	opts.OnTransition = func(tr Transition) {
		events(tr)
		o.trs <- tr
	}
	o.tracker = NewTracker(KubeWatches(watcher), helm, opts)
	o.reg.MustRegister(NewCollector(o.tracker))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		o.tracker.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return o
}

// configMapEvents records modules' Events on the values ConfigMap, as
// modulestatus.Events does without Module objects.
type configMapEvents struct{ cm *kube.ConfigMap }

func (c configMapEvents) ModuleEvent(ctx context.Context, _, eventType, reason, message string) error {
	return c.cm.Event(ctx, eventType, reason, message)
}

// deploy installs the module's chart (values: the chart's values) and
// tells the tracker, as a module run does.
func (o *operatorLike) deploy(t *testing.T, module, dir string, values map[string]any) {
	t.Helper()
	res, err := o.helm.Upgrade(t.Context(), kube.Release{Name: module, Key: "m", ChartDir: dir, ChartHash: fmt.Sprint(values), Values: map[string]any{"m": values}})
	if err != nil {
		t.Fatal(err)
	}
	o.tracker.Deployed(t.Context(), module, res.Revision, res.Upgraded)
}

// wait waits until the module's health is want, and returns it.
func (o *operatorLike) wait(t *testing.T, module string, want Status, within time.Duration) ModuleHealth {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		h, _ := o.tracker.Module(module)
		if h.Status == want {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("module %s: health %+v after %s, want %s", module, h, within, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// metric is the value of addon_operator_module_health{module,status}.
func (o *operatorLike) metric(t *testing.T, module string, s Status) float64 {
	t.Helper()
	mfs, err := o.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "addon_operator_module_health" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["module"] == module && labels["status"] == string(s) {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

// events lists the reasons of the Events on the values ConfigMap.
func (o *operatorLike) events(t *testing.T) []string {
	t.Helper()
	list, err := client.CoreV1().Events(o.ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.kind=ConfigMap"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Type+" "+e.Reason)
	}
	return out
}

// A module whose Deployment becomes Available turns Healthy; its metric
// says so; no Event is recorded for a deploy that went well.
func TestClusterHealthy(t *testing.T) {
	o := newOperatorLike(t, Options{})
	o.deploy(t, "web", chart(t, ""), map[string]any{"replicas": 2})
	h := o.wait(t, "web", Healthy, 60*time.Second)
	if h.Total != 2 || len(h.Objects) != 0 || h.Revision != 1 {
		t.Fatalf("health %+v: want 2 objects, all Current, revision 1", h)
	}
	if v := o.metric(t, "web", Healthy); v != 1 {
		t.Fatalf("addon_operator_module_health{status=Healthy} = %v", v)
	}
	if evs := o.events(t); len(evs) != 0 {
		t.Fatalf("events %v for a deploy that went well", evs)
	}
}

// A module whose pods never become ready is Progressing, then Degraded
// once its chart's progress timeout passes, naming the Deployment; a
// Warning Event says so once.
func TestClusterNeverReady(t *testing.T) {
	o := newOperatorLike(t, Options{})
	o.deploy(t, "stuck", chart(t, "annotations:\n  "+TimeoutAnnotation+": 4s\n"), map[string]any{"replicas": 2, "neverReady": true})
	h := o.wait(t, "stuck", Progressing, 30*time.Second)
	// the ConfigMap's watch may list after the Deployment's: Progressing
	// ranks above its Unknown
	for deadline := time.Now().Add(10 * time.Second); len(h.Objects) > 1 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		h = o.wait(t, "stuck", Progressing, 30*time.Second)
	}
	if len(h.Objects) != 1 || h.Objects[0].Kind != "Deployment" || h.Objects[0].Status != "InProgress" {
		t.Fatalf("Progressing with %+v: want the Deployment InProgress", h.Objects)
	}
	h = o.wait(t, "stuck", Degraded, 30*time.Second)
	if !strings.Contains(h.Message, "Deployment/"+o.ns+"/stuck: not Current 4s after its rollout") {
		t.Fatalf("Degraded: %q", h.Message)
	}
	if o.metric(t, "stuck", Degraded) != 1 || o.metric(t, "stuck", Progressing) != 0 {
		t.Fatal("the metric does not say Degraded")
	}
	var evs []string
	deadline := time.Now().Add(10 * time.Second)
	for len(evs) == 0 && time.Now().Before(deadline) {
		evs = o.events(t)
		time.Sleep(50 * time.Millisecond)
	}
	if len(evs) != 1 || evs[0] != "Warning ModuleDegraded" {
		t.Fatalf("events %v, want one ModuleDegraded", evs)
	}
}

// A Healthy module whose Deployment breaks later, with no rollout (its
// pods gone and none can be scheduled), is Degraded within 10 s of the
// breakage, without waiting for the progress timeout; fixed, it is Healthy
// again and an Event says so.
func TestClusterLaterBreakage(t *testing.T) {
	o := newOperatorLike(t, Options{ProgressTimeout: time.Hour})
	o.deploy(t, "web", chart(t, ""), map[string]any{"replicas": 2})
	o.wait(t, "web", Healthy, 60*time.Second)
	ctx := t.Context()
	// no new pod can start: the node is cordoned (the package's tests run
	// one at a time; the cleanup uncordons it)
	cordon(t, true)
	t.Cleanup(func() { cordon(t, false) })
	broke := time.Now()
	if err := client.CoreV1().Pods(o.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{LabelSelector: "app=web"}); err != nil {
		t.Fatal(err)
	}
	h := o.wait(t, "web", Degraded, 10*time.Second)
	t.Logf("Degraded %s after the pods were deleted: %s", time.Since(broke).Round(time.Millisecond), h.Message)
	if !strings.Contains(h.Message, "broke without a rollout") {
		t.Fatalf("Degraded: %q", h.Message)
	}
	cordon(t, false)
	o.wait(t, "web", Healthy, 60*time.Second)
	want := map[string]bool{"Warning ModuleDegraded": true, "Normal ModuleHealthy": true}
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs := o.events(t)
		got := map[string]bool{}
		for _, e := range evs {
			got[e] = true
		}
		if len(evs) == 2 && got["Warning ModuleDegraded"] && got["Normal ModuleHealthy"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events %v, want %v once each", evs, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cordon marks the simulated node unschedulable, or schedulable again.
func cordon(t *testing.T, on bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	if _, err := client.CoreV1().Nodes().Patch(context.Background(), testenv.NodeName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}
