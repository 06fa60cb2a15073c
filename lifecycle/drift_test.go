package lifecycle

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/addonops/addon-operator/drift"
)

// webModule is a module whose chart is one Deployment.
func webModule() map[string]string {
	return map[string]string{
		"modules/values.yaml":                "webEnabled: true\n",
		"modules/001-web/Chart.yaml":         "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"modules/001-web/templates/web.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: app\n        image: registry.example/web:1\n",
	}
}

// TestDriftWarnCorrectMaintenance: a hand edit of a Deployment's image is
// reported (/status, addon_operator_module_drifted_objects, one Event,
// /debug/modules/NAME/diff); with webDrift: warn it stays, with the
// default (correct) the chart's image is applied again while the
// replicas an autoscaler set through /scale are left alone; in
// maintenance it is reported and not corrected; a bad mode is refused.
func TestDriftWarnCorrectMaintenance(t *testing.T) {
	t.Parallel()
	e := parallelSetup(t, webModule(), map[string]string{"webDrift": "warn"})
	e.withDrift(t)
	e.start()
	e.waitReady()
	ctx := t.Context()
	deployments := client.AppsV1().Deployments(e.ns)

	// the HPA controller's write: replicas through /scale as kube-controller-manager
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		_, err := deployments.UpdateScale(ctx, "web", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: e.ns},
			Spec: autoscalingv1.ScaleSpec{Replicas: 3}}, metav1.UpdateOptions{FieldManager: "kube-controller-manager"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	e.op.drift.CheckAll(ctx)
	if st := e.moduleStatus("web"); st.Drift != nil {
		t.Fatalf("the autoscaler's replicas reported as drift: %+v", st.Drift)
	}

	handEditImage(t, e.ns, "registry.example/web:hand")
	image := func() string {
		t.Helper()
		d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 3 {
			t.Errorf("replicas %d, want the autoscaler's 3", *d.Spec.Replicas)
		}
		return d.Spec.Template.Spec.Containers[0].Image
	}
	metric := func() float64 { return testutil.ToFloat64(e.op.metrics.DriftedObjects.WithLabelValues("web")) }

	// warn: reported, left as it is; one Event for two checks
	e.op.drift.CheckAll(ctx)
	e.op.drift.CheckAll(ctx)
	e.idle()
	st := e.moduleStatus("web")
	if st.Drift == nil || st.Drift.Mode != DriftWarn || len(st.Drift.Objects) != 1 ||
		st.Drift.Objects[0].Ref() != "Deployment/"+e.ns+"/web" || strings.Join(st.Drift.Objects[0].Fields, ",") != "spec.template.spec.containers[0].image" {
		t.Fatalf("drift on /status: %+v", st.Drift)
	}
	if n := metric(); n != 1 {
		t.Fatalf("addon_operator_module_drifted_objects = %v, want 1", n)
	}
	if img := image(); img != "registry.example/web:hand" {
		t.Fatalf("warn corrected the image: %s", img)
	}
	if n := e.events("Drifted"); n != 1 {
		t.Fatalf("%d Drifted Events, want 1", n)
	}
	get := serveHandler(t, e.op.Handler(HTTPOptions{}))
	code, diff := get("/debug/modules/web/diff")
	if code != http.StatusOK || !strings.Contains(diff, "-      - image: registry.example/web:hand") || !strings.Contains(diff, "+      - image: registry.example/web:1") {
		t.Fatalf("module diff: %d\n%s", code, diff)
	}

	// correct (the default, once the override goes): the chart's image is back
	e.setConfigMap(map[string]string{})
	e.eventually("the ConfigMap without webDrift", func() bool { return len(e.op.trees.Load().ConfigData) == 0 })
	e.op.drift.CheckAll(ctx)
	e.idle()
	if img := image(); img != "registry.example/web:1" {
		t.Fatalf("correct left the image at %s", img)
	}
	if st := e.moduleStatus("web"); st.Drift != nil || metric() != 0 {
		t.Fatalf("after the correction: %+v, metric %v", st.Drift, metric())
	}

	// maintenance: reported, never corrected
	e.setConfigMap(map[string]string{"webMaintenance": NoResourceReconciliation})
	e.eventually("web in maintenance", func() bool { return testutil.ToFloat64(e.op.metrics.Maintenance.WithLabelValues("web")) == 1 })
	e.idle()
	handEditImage(t, e.ns, "registry.example/web:again")
	e.op.drift.CheckAll(ctx)
	e.idle()
	if st := e.moduleStatus("web"); st.Drift == nil || st.Drift.Mode != "maintenance" {
		t.Fatalf("drift in maintenance: %+v", st.Drift)
	}
	if img := image(); img != "registry.example/web:again" {
		t.Fatalf("maintenance corrected the image: %s", img)
	}

	// a mode that is neither is refused like values a schema refuses
	refused := testutil.ToFloat64(e.op.metrics.ConfigValuesErrors)
	e.setConfigMap(map[string]string{"webDrift": "sometimes"})
	e.eventually("the bad mode refused", func() bool { return testutil.ToFloat64(e.op.metrics.ConfigValuesErrors) > refused })
}

func handEditImage(t *testing.T, ns, image string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := client.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = image
		_, err = client.AppsV1().Deployments(ns).Update(t.Context(), d, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (e *env) moduleStatus(name string) ModuleStatus {
	e.t.Helper()
	for _, m := range e.op.Status().Modules {
		if m.Name == name {
			return m
		}
	}
	e.t.Fatalf("no module %s on /status", name)
	return ModuleStatus{}
}

// withDrift wires a real detector whose checks run from the test.
func (e *env) withDrift(t testing.TB) {
	e.checkInterval = 0
	e.configure = func(cfg *Config) { cfg.Drift = e.detector(t) }
}

// detector is a real drift detector on e's namespace and Helm.
func (e *env) detector(t testing.TB) *drift.Detector {
	t.Helper()
	d, err := drift.New(restCfg, e.ns, e.helm, drift.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// events counts the Events of a reason in the test's namespace.
func (e *env) events(reason string) int {
	e.t.Helper()
	list, err := client.CoreV1().Events(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, ev := range list.Items {
		if ev.Reason == reason {
			n++
		}
	}
	return n
}

// TestDriftLeavesHookObjectPatch: an afterHelm hook's object patch of a
// field the chart sets (the Deployment's replicas) through a real
// operator is not drift and is not reverted in correct mode; a hand edit
// beside it is corrected and the hook's replicas stay.
func TestDriftLeavesHookObjectPatch(t *testing.T) {
	t.Parallel()
	e := parallelSetup(t, webModule(), map[string]string{})
	ops := `{"operation":"MergePatch","apiVersion":"apps/v1","kind":"Deployment","namespace":"` + e.ns + `","name":"web","mergePatch":{"spec":{"replicas":3}}}` + "\n"
	hook := filepath.Join(e.dir, "modules/001-web/hooks/scale.sh")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hook, []byte(opsHook(`{"configVersion":"v1","afterHelm":1}`, ops, 0)), 0o755); err != nil {
		t.Fatal(err)
	}
	e.withDrift(t)
	e.start()
	e.waitReady()
	ctx := t.Context()
	deployments := client.AppsV1().Deployments(e.ns)
	replicas := func() int32 {
		t.Helper()
		d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return *d.Spec.Replicas
	}
	if r := replicas(); r != 3 {
		t.Fatalf("replicas %d after the afterHelm hook, want its 3", r)
	}
	e.op.drift.CheckAll(ctx)
	e.idle()
	if st := e.moduleStatus("web"); st.Drift != nil {
		t.Fatalf("the hook's object patch reported as drift: %+v", st.Drift)
	}
	if r := replicas(); r != 3 {
		t.Fatalf("replicas %d after a check in correct mode, want the hook's 3", r)
	}

	handEditImage(t, e.ns, "registry.example/web:hand")
	e.op.drift.CheckAll(ctx)
	e.idle()
	d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.example/web:1" || *d.Spec.Replicas != 3 {
		t.Fatalf("after the correction: image %s, replicas %d; want the chart's image and the hook's 3", img, *d.Spec.Replicas)
	}
	if st := e.moduleStatus("web"); st.Drift != nil {
		t.Fatalf("drift after the correction: %+v", st.Drift)
	}
}
