package helmtest

import (
	"errors"
	"os"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/addonops/addon-operator/internal/testenv"
)

var restCfg *rest.Config

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, func(cp *testenv.ControlPlane) { restCfg = cp.Config }))
}

// A release installed through Config is what Last reads back, labels and
// all, from the namespace's Secrets.
func TestInstallAndLast(t *testing.T) {
	const ns = "helmtest"
	client := kubernetes.NewForConfigOrDie(restCfg)
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := Config(restCfg, ns)
	if err != nil {
		t.Fatal(err)
	}
	inst := action.NewInstall(cfg)
	inst.ReleaseName, inst.Namespace, inst.Labels = "demo", ns, map[string]string{"addonops.io/commit": "abc"}
	if _, err := inst.Run(&chart.Chart{Metadata: &chart.Metadata{Name: "demo", Version: "0.1.0", APIVersion: "v2"}}, nil); err != nil {
		t.Fatal(err)
	}
	secrets, err := client.CoreV1().Secrets(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "owner=helm,name=demo"})
	if err != nil || len(secrets.Items) != 1 {
		t.Fatalf("release secrets = %v (%v), want one", secrets, err)
	}
	for _, tt := range []struct {
		name, commit string
		err          error
	}{
		{name: "demo", commit: "abc"},
		{name: "missing", err: driver.ErrReleaseNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rel, err := Last(restCfg, ns, tt.name)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err == nil && rel.Labels["addonops.io/commit"] != tt.commit {
				t.Fatalf("labels = %v, want commit %q", rel.Labels, tt.commit)
			}
		})
	}
}
