package drift

import (
	"context"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/addonops/addon-operator/internal/testenv"
	"github.com/addonops/addon-operator/kube"
)

// The package's control plane runs kube-controller-manager (its
// horizontal-pod-autoscaler controller) beside the API server; started by
// the first test that needs it.
var (
	cpOnce sync.Once
	cp     *testenv.ControlPlane
	cpErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if cp != nil {
		cp.Stop()
	}
	os.Exit(code)
}

func controlPlane(t testing.TB) *testenv.ControlPlane {
	t.Helper()
	cpOnce.Do(func() { cp, cpErr = testenv.Start(context.Background(), testenv.WithWorkloads()) })
	if cpErr != nil {
		t.Fatal(cpErr)
	}
	return cp
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// install installs testdata/chart as release web in a new namespace and
// returns the namespace and the Helm client.
func install(t testing.TB, c *testenv.ControlPlane, cs kubernetes.Interface, name string) (string, *kube.Helm) {
	t.Helper()
	ns := "drift-" + name
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h, err := kube.NewHelm(c.Config, ns, quiet())
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Upgrade(t.Context(), kube.Release{Name: "web", ChartDir: "testdata/chart", ChartHash: "1", Key: "web",
		Values: map[string]any{"web": map[string]any{"image": "registry.example/web:1"}}})
	if err != nil {
		t.Fatal(err)
	}
	return ns, h
}

// TestDriftHandEditAndAutoscaler: on a real control plane with the HPA
// controller, an HPA's replicas are not drift; a hand edit of the image
// and of a Secret's data are, with their paths; the diff shows the image
// and never the Secret's values; Correct puts the chart's fields back and
// leaves the HPA's replicas alone.
func TestDriftHandEditAndAutoscaler(t *testing.T) {
	c := controlPlane(t)
	cs := kubernetes.NewForConfigOrDie(c.Config)
	ns, h := install(t, c, cs, "hand-edit")
	d, err := New(c.Config, ns, h, Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	deployments := cs.AppsV1().Deployments(ns)
	waitFor(ctx, t, "the HPA scaled web to its minimum of 2", func() bool {
		dep, err := deployments.Get(ctx, "web", metav1.GetOptions{})
		return err == nil && dep.Spec.Replicas != nil && *dep.Spec.Replicas == 2
	})

	rep, ok, err := d.Check(ctx, "web")
	if err != nil || !ok {
		t.Fatalf("Check: %v (release found: %v)", err, ok)
	}
	if rep.Checked != 3 || len(rep.Objects) != 0 {
		t.Fatalf("before any edit: %+v, want 3 objects checked and no drift", rep)
	}

	// hand edits, as kubectl edit makes them
	handEdit(ctx, t, cs, ns)

	rep, _, err = d.Check(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Object{}
	for _, o := range rep.Objects {
		got[o.Ref()] = o
	}
	if len(got) != 2 {
		t.Fatalf("drifted: %+v, want the Deployment and the Secret", rep.Objects)
	}
	web := got["Deployment/"+ns+"/web"]
	if !slices.Equal(web.Fields, []string{"spec.template.spec.containers[0].image"}) {
		t.Errorf("Deployment drift fields %q, want only the image", web.Fields)
	}
	if !slices.Equal(web.Ignored, []string{"spec.replicas (kube-controller-manager, /scale)"}) {
		t.Errorf("Deployment ignored fields %q, want the HPA's replicas", web.Ignored)
	}
	if s := got["Secret/"+ns+"/web"]; !slices.Equal(s.Fields, []string{"data.password"}) {
		t.Errorf("Secret drift fields %q, want data.password", s.Fields)
	}

	diff, err := d.Diff(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-      - image: registry.example/web:hand", "+      - image: registry.example/web:1", "(redacted, differs)", "kube-controller-manager"} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}
	for _, secret := range []string{"hand-secret", "chart-secret", "aGFuZC1zZWNyZXQ", "Y2hhcnQtc2VjcmV0"} {
		if strings.Contains(diff, secret) {
			t.Errorf("diff shows the Secret's value %q:\n%s", secret, diff)
		}
	}

	if _, err := d.Correct(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	dep, err := deployments.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := dep.Spec.Template.Spec.Containers[0].Image; img != "registry.example/web:1" {
		t.Errorf("image after Correct: %s, want the chart's", img)
	}
	if *dep.Spec.Replicas != 2 {
		t.Errorf("replicas after Correct: %d, want the HPA's 2", *dep.Spec.Replicas)
	}
	sec, err := cs.CoreV1().Secrets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil || string(sec.Data["password"]) != "chart-secret" {
		t.Errorf("Secret after Correct: %q (%v), want the chart's", sec.Data["password"], err)
	}
	if rep, _, err := d.Check(ctx, "web"); err != nil || len(rep.Objects) != 0 {
		t.Errorf("after Correct: %+v, %v; want no drift", rep.Objects, err)
	}
	// the HPA keeps its replicas: nothing fights it back to 1
	time.Sleep(time.Second)
	if dep, err := deployments.Get(ctx, "web", metav1.GetOptions{}); err != nil || *dep.Spec.Replicas != 2 {
		t.Errorf("replicas later: %v, %v", dep.Spec.Replicas, err)
	}
}

// handEdit changes the Deployment's image and the Secret's password as
// kubectl edit does (an update as manager kubectl-edit).
func handEdit(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dep, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		dep.Spec.Template.Spec.Containers[0].Image = "registry.example/web:hand"
		_, err = cs.AppsV1().Deployments(ns).Update(ctx, dep, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sec, err := cs.CoreV1().Secrets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Data["password"] = []byte("hand-secret")
	if _, err := cs.CoreV1().Secrets(ns).Update(ctx, sec, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
}

func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
