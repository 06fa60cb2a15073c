package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"

	"github.com/addonops/addon-operator/internal/testenv"
)

var plane = testenv.Shared{}

func TestMain(m *testing.M) { os.Exit(plane.Main(m)) }

// The chart's crds/ applied as `make run` does: the Module objects'
// resource is served when applyCRDs returns (the operator, started next,
// asks discovery once), and a second apply (a restart against a kept
// data directory) changes nothing. A file that is no CRD is refused.
func TestApplyCRDs(t *testing.T) {
	cp := plane.Get(t)
	dir := filepath.Join("..", "..", "deploy", "chart", "addon-operator", "crds")
	for range 2 {
		names, err := applyCRDs(t.Context(), cp.Config, dir)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(names, []string{"modules.addonops.io"}) {
			t.Fatalf("applied %v", names)
		}
		list, err := discovery.NewDiscoveryClientForConfigOrDie(cp.Config).ServerResourcesForGroupVersion("addonops.io/v1alpha1")
		if err != nil {
			t.Fatalf("addonops.io/v1alpha1 not served after applyCRDs: %v", err)
		}
		if len(list.APIResources) == 0 || !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "modules" }) {
			t.Fatalf("modules not served: %+v", list.APIResources)
		}
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := applyCRDs(t.Context(), cp.Config, bad); err == nil {
		t.Fatal("a ConfigMap file was taken for a CRD")
	}
}
